"""Generate the student notebooks in notebooks/ from the sources in solutions/.

    python -m tools.generate_notebooks            # all notebooks
    python -m tools.generate_notebooks --check    # fail if notebooks/ would change

Steps, all deterministic:
1. Lay out an nbgrader course folder (build/course: source/<id>/<id>.ipynb).
2. Run nbgrader's own generate_assignment for every notebook (clears outputs,
   removes hidden tests, replaces solutions by `raise NotImplementedError()`,
   records the assignment in the gradebook).
3. Tag, in the release only, the cells that must raise while the exercises are
   unanswered (`raises-exception`): answer cells that raise at top level, test
   cells, and every code cell that uses a name such a cell defines (transitively).
4. Refuse knock-on errors: an untested cell that fails unanswered must itself use
   an answer (it "truly needs an answer"). One that fails only because it uses the
   results of another failing cell (a plot of an unanswered exercise's numbers, a
   name a failed cell never defined) keeps an unanswered notebook needlessly red:
   merge it into the cell that computes its inputs, or compute them with the
   notebook's own code (e.g. `namedaxes.model`).
5. Write notebooks/<id>.ipynb and print, per notebook, how many cells fail while
   it is unanswered.
6. Editions in other languages (`EDITIONS`, today "zh"): `solutions/zh/<id>.ipynb` from the
   English source and `notebooks/zh/<id>.ipynb` from the English release just built, each with
   its markdown, student-facing code comments (nbgrader's `# YOUR CODE HERE` in the release's answer
   cells too), test-cell docstrings and the labels its code prints
   (`courseinfo.labels`: the string literals of `print(...)`, `assert` messages and printed loop
   labels) translated from `locale/zh/notebooks/<id>.po` (tools/translate/ cuts the prose into
   the same units; an untranslated or fuzzy unit stays English) and
   `metadata.namedaxes.language = "zh"`. A cell nbgrader has locked carries a
   checksum of its source (the release's `nbgrader.checksum`); nbgrader's Validate reports a cell
   whose source no longer matches it as "changed", so a translated cell gets the checksum of its
   translated source (nbgrader's own `compute_checksum`). Nothing else changes: cells, cell ids,
   cell metadata (grade ids, points, tags), code (a label's `{fields}` included) and their order
   are the English ones, so the editions grade identically. Each edition's set-up cell must have a comment in its
   language: that is how a kernel knows the language when nothing tells it the notebook's path (Colab;
   `namedaxes.i18n`, rule 4). The English files are written exactly as before (no metadata
   added: a notebook without `metadata.namedaxes` is English).

`--check` fails when any of these files differs from what would be written (stale), when an
edition's code differs from its English notebook's (comments, docstrings and label words aside),
when an edition shows a label of its code in English (untranslated, fuzzy, or a translation that
does not fit its literal), and when a notebook exists that solutions/ does not generate.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import copy
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

import nbformat

from courseinfo import labels as code_labels
from courseinfo.course import COURSE_ID, EDITIONS, NOTEBOOKS, ROOT, SOLUTIONS, built_course, notebook_ids
from courseinfo.nbgrader_metadata import nbgrader_cell
from namedaxes.i18n import setup_cell_language, translator
from tools import translate  # the prose units and the catalogs
from tools.stamp import notebooks_stamp

COURSE = built_course()
RAISES = "raises-exception"

NBGRADER_CONFIG = f'''# Written by tools/generate_notebooks.py: the nbgrader course built from solutions/.
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "{COURSE_ID}"
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.Execute.timeout = 60
'''


def layout_course(ids: list[str]) -> None:
    COURSE.mkdir(parents=True, exist_ok=True)
    (COURSE / "nbgrader_config.py").write_text(NBGRADER_CONFIG)
    for aid in ids:
        dest = COURSE / "source" / aid
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        shutil.copy2(SOLUTIONS / f"{aid}.ipynb", dest / f"{aid}.ipynb")


def run_nbgrader(ids: list[str]) -> None:
    # nbgrader runs the `alembic` console script of its own environment to set up the gradebook.
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = str(COURSE)
    config.CourseDirectory.course_id = COURSE_ID
    config.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    api = NbGraderAPI(config=config)
    for aid in ids:
        result = api.generate_assignment(aid, force=True)
        if not result["success"]:
            sys.exit(f"nbgrader generate_assignment {aid} failed:\n{result['error']}\n{result['log']}")


# ------------------------------------------------------------------ tagging
def _names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names bound at top level, names loaded anywhere) in a cell's code."""
    bound, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else used).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    return bound, used


def _raises_at_top_level(tree: ast.Module) -> bool:
    return any(isinstance(stmt, ast.Raise) for stmt in tree.body)


def _parse(source: str) -> ast.Module:
    # IPython magics / shell escapes are not Python: drop those lines for the analysis.
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(lines))


def _analyse(nb) -> tuple[list[int], list[int]]:
    """(cells that raise while unanswered, those of them that are knock-on errors), by index."""
    tainted: set[str] = set()  # names that are unusable while unanswered
    answers: set[str] = set()  # names the answer cells define (the stubs)
    tagged, knock_on = [], []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        meta = nbgrader_cell(cell)
        tree = _parse(cell.source)
        bound, used = _names(tree)
        if meta.solution:
            tainted |= bound  # the stub defines these names
            answers |= bound
            must_raise = _raises_at_top_level(tree)
        else:
            must_raise = meta.grade or bool(used & tainted)
            if must_raise and not meta.grade and not used & answers:
                knock_on.append(index)
        if must_raise:
            tainted |= bound - set(dir(builtins))
            tagged.append(index)
    return tagged, knock_on


def tag_cells_that_must_raise(nb) -> list[int]:
    """Tag cells that raise while unanswered; return their indices."""
    tagged, _ = _analyse(nb)
    for index in tagged:
        cell = nb.cells[index]
        cell.metadata["tags"] = [t for t in cell.metadata.get("tags", []) if t != RAISES] + [RAISES]
    return tagged


def knock_on_cells(nb) -> list[int]:
    """Untested cells that fail while unanswered without using an answer themselves (see step 4)."""
    return _analyse(nb)[1]


def red_cell_summary(nb) -> str:
    """How many cells fail in the unanswered release: test cells, and other cells that run an answer."""
    tagged, _ = _analyse(nb)
    tests = sum(nbgrader_cell(nb.cells[i]).grade for i in tagged)
    return f"{len(tagged)} cells fail unanswered ({tests} test cells, {len(tagged) - tests} that run an answer)"


def build(ids: list[str]) -> dict[str, str]:
    layout_course(ids)
    run_nbgrader(ids)
    out, problems = {}, []
    for aid in ids:
        nb = nbformat.read(COURSE / "release" / aid / f"{aid}.ipynb", as_version=4)
        tag_cells_that_must_raise(nb)
        for index in knock_on_cells(nb):
            problems.append(
                f"{aid}, cell {index}: it fails while the notebook is unanswered only because it uses the "
                f"results of another failing cell, not an answer. Merge it into the cell that computes "
                f"them, or compute them with the notebook's own code.\n    "
                + nb.cells[index].source.splitlines()[0][:100]
            )
        out[aid] = nbformat.writes(nb) + "\n"
    if problems:
        sys.exit("Knock-on errors in the student notebooks:\n  " + "\n  ".join(problems))
    return out


# ------------------------------------------------------------------ editions in other languages
def translate_notebook(nb, lang: str, aid: str):
    """A copy of `nb` (a solution or its release) with its prose in `lang` (see step 6)."""
    table = translate.translations(lang, aid)
    figure_words = translator(lang)  # namedaxes.po: the figures' words, as the plots translate them when drawn
    out = nbformat.from_dict(copy.deepcopy(nb))
    for cell in out.cells:
        if cell.cell_type == "markdown":
            cell.source = translate.render_markdown(cell.source, lambda text: table.get((cell.id, text), text))  # noqa: B023 - run in this iteration
        elif cell.cell_type == "code":
            context, doc = translate.comment_context(cell.id), translate.docstring_context(cell.id)
            cell.source = translate.render_comments(cell.source, lambda text: table.get((context, text), text))  # noqa: B023 - run in this iteration
            cell.source = translate.render_docstring(cell.source, lambda text: table.get((doc, text), text))  # noqa: B023 - run in this iteration
            output = translate.output_context(cell.id)
            cell.source = translate.render_outputs(cell.source, lambda text: table.get((output, text), text))  # noqa: B023 - run in this iteration
            cell.source = code_labels.render_figures(cell.source, figure_words)  # as the figure draws them
            if nbgrader_cell(cell).solution:
                cell.source = translate.render_stub(
                    cell.source, lambda text: table.get((translate.STUB_CONTEXT, text), text)
                )
        nbgrader = cell.metadata.get("nbgrader") or {}
        if "checksum" in nbgrader:
            nbgrader["checksum"] = _checksum(cell)
    out.metadata["namedaxes"] = {"language": lang}
    return out


def _checksum(cell) -> str:
    """nbgrader's checksum of a cell (what Validate and autograde compare a locked cell against)."""
    from nbgrader.utils import compute_checksum

    return compute_checksum(cell)


def _without_checksum(metadata) -> dict:
    meta = copy.deepcopy(dict(metadata))
    if isinstance(meta.get("nbgrader"), dict):
        meta["nbgrader"] = {k: v for k, v in meta["nbgrader"].items() if k != "checksum"}
    return meta


def edition_differences(english, edition) -> list[str]:
    """Where `edition` differs from `english` in anything but prose and its language (empty: identical)."""
    problems = []
    if [c.get("id") for c in english.cells] != [c.get("id") for c in edition.cells]:
        return ["the cells (ids, order or number) differ"]
    for a, b in zip(english.cells, edition.cells):
        if a.cell_type != b.cell_type or _without_checksum(a.metadata) != _without_checksum(b.metadata):
            problems.append(f"cell {a.get('id')}: type or metadata (grade id, points, tags) differ")
        elif ("checksum" in (a.metadata.get("nbgrader") or {})) != (
            "checksum" in (b.metadata.get("nbgrader") or {})
        ) or ("checksum" in (b.metadata.get("nbgrader") or {}) and b.metadata.nbgrader.checksum != _checksum(b)):
            problems.append(
                f"cell {a.get('id')}: its nbgrader checksum is not its own source's (Validate would call it changed)"
            )
        elif a.cell_type == "code" and (
            translate.strip_prose(a.source) != translate.strip_prose(b.source) or a.get("outputs") != b.get("outputs")
        ):
            problems.append(f"cell {a.get('id')}: the code differs")
    meta = {k: v for k, v in edition.metadata.items() if k != "namedaxes"}
    if meta != english.metadata:
        problems.append("the notebook metadata differs")
    lang = (edition.metadata.get("namedaxes") or {}).get("language")
    setup = [c for c in edition.cells if c.cell_type == "code" and "setup_devices(" in c.source]
    if lang and lang != "en" and not any(setup_cell_language(c.source) == lang for c in setup):
        problems.append(
            f"the set-up cell (the one that calls setup_devices) has no comment in '{lang}': a kernel "
            f"that runs the notebook outside Jupyter (Colab, a copy elsewhere) could not tell its "
            f"language (namedaxes.i18n, rule 4); translate its comment in the catalog"
        )
    return problems


def english_labels(english, edition, aid: str) -> list[str]:
    """The labels of `edition`'s code (a translated notebook) still in English, "cell id: text" of each: a label
    the edition prints as the English does, with words that are not its notebook's code ("pmap:" may stay)."""
    left, allowed = [], None
    for a, b in zip(english.cells, edition.cells):
        if a.cell_type != "code":
            continue
        ours = translate.output_units(b.source)
        for text in translate.output_units(a.source):
            if text in ours:
                allowed = translate.code_words(aid) if allowed is None else allowed
                if any("English left" in p for p in translate.label_problems(text, text, allowed)):
                    left.append(f"{b.get('id')}: {text!r}")
    return left


def build_editions(ids: list[str], releases: dict[str, str]) -> dict[Path, str]:
    """Every edition file's path -> its text."""
    out = {}
    for lang in EDITIONS:
        for aid in ids:
            source = nbformat.read(SOLUTIONS / f"{aid}.ipynb", as_version=4)
            release = nbformat.reads(releases[aid], as_version=4)
            out[SOLUTIONS / lang / f"{aid}.ipynb"] = nbformat.writes(translate_notebook(source, lang, aid)) + "\n"
            out[NOTEBOOKS / lang / f"{aid}.ipynb"] = nbformat.writes(translate_notebook(release, lang, aid)) + "\n"
    return out


def _edition_problems(paths: Iterable[Path]) -> list[str]:
    """Code that differs between an edition on disk and its English notebook, and labels it shows in English."""
    problems = []
    for path in paths:
        english = path.parent.parent / path.name
        if path.exists() and english.exists():
            a, b = nbformat.read(english, as_version=4), nbformat.read(path, as_version=4)
            for problem in edition_differences(a, b):
                problems.append(f"{path.relative_to(ROOT)} differs from its English notebook: {problem}")
            left = english_labels(a, b, path.stem)
            if left:
                problems.append(
                    f"{path.relative_to(ROOT)}: {len(left)} label(s) its code prints are English "
                    f"(translate them in locale/{path.parent.name}/notebooks/{path.stem}.po, "
                    f"`make check-catalogs` says why one is refused): " + "; ".join(left[:5])
                )
    return problems


def _translated_summary(aid: str, lang: str) -> str:
    source = nbformat.read(SOLUTIONS / f"{aid}.ipynb", as_version=4)
    table = translate.translations(lang, aid)
    units = [
        (c.id, u.text) for c in source.cells if c.cell_type == "markdown" for u in translate.markdown_units(c.source)
    ]
    units += [
        (translate.comment_context(c.id), t)
        for c in source.cells
        if c.cell_type == "code"
        for _, _, t in translate.comment_units(c.source)
    ]
    units += [
        (translate.docstring_context(c.id), translate.docstring_unit(c.source))
        for c in source.cells
        if c.cell_type == "code" and translate.docstring_unit(c.source) is not None
    ]
    units += [
        (translate.output_context(c.id), t)
        for c in source.cells
        if c.cell_type == "code"
        for t in translate.output_units(c.source)
    ]
    units = set(units)
    done = sum(key in table for key in units)
    return f"{done}/{len(units)} prose units translated"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--check", action="store_true", help="fail if notebooks/ differs from what solutions/ generates"
    )
    parser.add_argument("ids", nargs="*", help="assignment ids (default: every notebook in solutions/)")
    args = parser.parse_args(argv)
    ids = args.ids or notebook_ids(SOLUTIONS)
    generated = build(ids)
    editions = build_editions(ids, generated)
    NOTEBOOKS.mkdir(exist_ok=True)
    drift = []
    for aid, text in generated.items():
        target = NOTEBOOKS / f"{aid}.ipynb"
        if args.check:
            if not target.exists() or target.read_text() != text:
                drift.append(target.name)
        else:
            target.write_text(text)
    for target, text in editions.items():
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                drift.append(str(target.relative_to(ROOT)))
        else:
            target.parent.mkdir(exist_ok=True)
            target.write_text(text, encoding="utf-8")
    stale = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb") if p.stem not in notebook_ids(SOLUTIONS))
    stale += sorted(
        str(p.relative_to(ROOT))
        for lang in EDITIONS
        for folder in (SOLUTIONS / lang, NOTEBOOKS / lang)
        for p in folder.glob("*.ipynb")
        if p.stem not in notebook_ids(SOLUTIONS)
    )
    stamp = notebooks_stamp() if not args.ids else None  # the whole course: what `make release` asks about
    if args.check:
        differ = _edition_problems(editions)
        if drift or stale or differ:
            if stamp is not None:
                stamp.remove()
            if drift or stale:
                print("notebooks/ or an edition is out of date with solutions/ and locale/:", ", ".join(drift + stale))
            for problem in differ:
                print(problem)
            print("Regenerate with `make notebooks` and commit (see docs/translators.md).")
            return 1
        print(
            f"notebooks/ matches solutions/ ({len(generated)} notebooks; editions {', '.join(EDITIONS)}: "
            f"{len(editions)} notebooks, code identical)"
        )
        if stamp is not None:
            stamp.write()
    else:
        for name in stale:
            (NOTEBOOKS / name).unlink() if "/" not in name else (ROOT / name).unlink()
        for aid, text in generated.items():
            print(
                f"  {aid}: {red_cell_summary(nbformat.reads(text, as_version=4))}; "
                + "; ".join(f"{lang}: {_translated_summary(aid, lang)}" for lang in EDITIONS)
            )
        print(
            f"generated {len(generated)} student notebooks in notebooks/ and {len(editions)} edition notebooks "
            f"({', '.join(f'solutions/{lang}/, notebooks/{lang}/' for lang in EDITIONS)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
