"""Compose each notebook page: the student's cells, with the outputs of the solved run.

Design: a page is a notebook that Sphinx (myst-nb, execution off) renders as it is. Its cells
are the student release's (notebooks/NN_x.ipynb, notebooks/zh/NN_x.ipynb: what nbgrader's
generate_assignment made, answer bodies replaced by stubs, hidden tests removed), so a page
holds no solution code and no hidden test by construction; tests/browser/test_site.py proves it
on the built HTML for every exercise. Outputs come from the solved notebook of the same edition,
executed fresh (execute_notebooks.py), matched cell by cell through the cell ids that the
release keeps. Each code cell is one of (`classify`):

- ANSWER (an nbgrader solution cell): the stub, no output, and a short label "your answer goes
  here";
- CHECK (an nbgrader test cell): the visible check, and a label saying what it does when run. Its
  solved output ("passed") is not shown: under an empty stub it would say the opposite of what a
  student meets;
- USES_ANSWER (a cell that runs an answer: one that generate_notebooks.py tagged
  `raises-exception` in the release and that is not tagged so in the solution, or one that
  reports on the checks, `q.progress()`): the solved output, under the label "with correct
  answers, this cell shows";
- DEMO (everything else: demonstrations, pictures, the deliberate errors caught by
  `show_error`): the solved output as it is.

Shown outputs lose the build machine's paths (the repository's and the Python installation's
prefixes, quoted by worker tracebacks), so a page names no folder of the machine that built it.
Every page also gets, after its title, the "Open in Colab" button for that notebook of that
edition and the note on what to run first there (site_text.py). Cell tags `site-answer`,
`site-check`, `site-uses-answer` become CSS classes (`tag_site-...`) for the page's style; the
nbgrader metadata is dropped. Files are written only when their content changed, so Sphinx's
incremental build re-renders only what did.
"""

from __future__ import annotations

import ast
import copy
import enum
import html
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from courseinfo.nbgrader_metadata import nbgrader_cell
from website import settings
from website.site_text import TEXT, text

RAISES = "raises-exception"


class CellKind(enum.Enum):
    ANSWER = "site-answer"
    CHECK = "site-check"
    USES_ANSWER = "site-uses-answer"
    DEMO = "site-demo"


@dataclass(frozen=True)
class Page:
    """One composed notebook page."""

    edition: str
    notebook_id: str
    path: Path  # the page's source under build/site-src/<edition>/notebooks/
    kinds: dict[str, CellKind]  # cell id -> kind, for the code cells
    figures: int  # images among the shown outputs


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _reports_on_checks(source: str) -> bool:
    """The cell calls a `progress()` (q.progress(): it lists the verdicts of the checks)."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name == "progress":
                return True
    return False


def classify(release_cell, solved_cell) -> CellKind:
    meta = nbgrader_cell(release_cell)
    if meta.solution:
        return CellKind.ANSWER
    if meta.grade:
        return CellKind.CHECK
    if (RAISES in _tags(release_cell) and RAISES not in _tags(solved_cell)) or _reports_on_checks(release_cell.source):
        return CellKind.USES_ANSWER
    return CellKind.DEMO


def _label(kind: CellKind, edition: str) -> dict:
    key = {CellKind.ANSWER: "answer_label", CellKind.CHECK: "check_label", CellKind.USES_ANSWER: "solved_label"}[kind]
    words = text(key, edition)
    return nbformat.v4.new_output(
        "display_data",
        data={"text/html": f'<p class="site-label {kind.value}-label">{html.escape(words)}</p>', "text/plain": words},
    )


def _machine_paths_removed(outputs: list) -> list:
    """Outputs with the build machine's paths cut: a worker's traceback quotes the files of the venv it
    ran in (`/home/.../.venv/lib/...`), which says nothing to a reader and names the machine."""
    prefixes = sorted({str(settings.ROOT) + "/", sys.base_prefix.rstrip("/") + "/"}, key=len, reverse=True)

    def cut(value):
        if isinstance(value, str):
            for prefix in prefixes:
                value = value.replace(prefix, "")
            return value
        if isinstance(value, list):
            return [cut(v) for v in value]
        return value

    for out in outputs:
        if "text" in out:
            out["text"] = cut(out["text"])
        if "traceback" in out:
            out["traceback"] = cut(out["traceback"])
        for mime in list(out.get("data", {})):
            if mime.startswith("text/"):
                out["data"][mime] = cut(out["data"][mime])
    return outputs


def _figures(outputs: list) -> int:
    return sum(
        1
        for out in outputs
        if out.get("output_type") in ("display_data", "execute_result")
        and any(mime.startswith("image/") for mime in out.get("data", {}))
    )


def figure_title(source: str, edition: str) -> str | None:
    """The title of the figure a cell draws with `namedaxes.plots` (`plot_*(..., title="...")`, else the function's
    default title), as the figure shows it in `edition` (the plots translate it when drawn); None: no such call."""
    import inspect

    from namedaxes import i18n, plots

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        name = getattr(func, "id", None) or getattr(func, "attr", None)  # plot_x(...) or plots.plot_x(...)
        if not (name and name.startswith("plot_") and callable(getattr(plots, name, None))):
            continue
        given = next((kw.value for kw in node.keywords if kw.arg == "title"), None)
        if isinstance(given, ast.Constant) and isinstance(given.value, str):
            title = given.value
        else:
            default = inspect.signature(getattr(plots, name)).parameters.get("title")
            title = default.default if default is not None and isinstance(default.default, str) else None
        if not title:  # a figure without a title: the site's own words for what it shows, where it has them
            key = f"figure_{name}"
            return text(key, edition) if key in TEXT else None
        i18n.set_language(edition)
        try:
            return i18n.gettext(title)
        finally:
            i18n.set_language(None)
    return None


def launch_cell(edition: str, notebook_id: str):
    """The Colab button and note (markdown, MyST)."""
    url = settings.colab_url(edition, notebook_id)
    note = text("colab_note", edition, repository=settings.REPOSITORY)
    button = (
        f'<p class="site-launch"><a class="site-colab" href="{html.escape(url)}" target="_blank" '
        f'rel="noopener">{html.escape(text("colab_button", edition))}</a></p>'
    )
    return nbformat.v4.new_markdown_cell(
        f"{button}\n\n````{{note}}\n{note}\n````\n", id="site-launch"
    )  # 4 backticks: the note holds a code fence


def compose(edition: str, notebook_id: str, executed: Path) -> tuple[nbformat.NotebookNode, dict[str, CellKind], int]:
    """The page notebook of `notebook_id` in `edition` from its release and its executed solution."""
    release_path = settings.folder(settings.RELEASE, edition) / f"{notebook_id}.ipynb"
    release = nbformat.read(release_path, as_version=4)
    solved = {cell.id: cell for cell in nbformat.read(executed, as_version=4).cells}
    cells, kinds, figures = [], {}, 0
    for cell in release.cells:
        page_cell = copy.deepcopy(cell)
        page_cell.metadata = {}
        if cell.cell_type == "code":
            if cell.id not in solved:
                raise SystemExit(
                    f"{release_path.relative_to(settings.ROOT)}: cell {cell.id} is not in its solution "
                    f"(`make notebooks` regenerates the release from solutions/)"
                )
            kind = kinds[cell.id] = classify(cell, solved[cell.id])
            shown = (
                []
                if kind in (CellKind.ANSWER, CellKind.CHECK)
                else _machine_paths_removed(copy.deepcopy(solved[cell.id].get("outputs", [])))
            )
            figures += _figures(shown)
            title = figure_title(solved[cell.id].source, edition) if _figures(shown) else None
            if title:  # the figure's text alternative, in the page's language (myst-nb: the image's alt)
                page_cell.metadata["mystnb"] = {"image": {"alt": text("figure_alt", edition, title=title)}}
            page_cell.outputs = ([] if kind is CellKind.DEMO else [_label(kind, edition)]) + shown
            page_cell.execution_count = None
            if kind is not CellKind.DEMO:
                page_cell.metadata["tags"] = [kind.value]
        cells.append(page_cell)
        if len(cells) == 1:
            cells.append(launch_cell(edition, notebook_id))
    page = nbformat.v4.new_notebook(
        cells=cells,
        metadata={
            "kernelspec": release.metadata.get("kernelspec", {}),
            "language_info": {"name": "python", "pygments_lexer": "ipython3"},
        },
    )
    return page, kinds, figures


def write_if_changed(path: Path, content: str) -> bool:
    """Write `content` unless the file already holds it (Sphinx rebuilds by modification time)."""
    if path.exists() and path.read_text(encoding="utf-8") == content:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return True


def write_notebook_page(edition: str, notebook_id: str, executed: Path) -> Page:
    """One notebook's page of the site in `edition`, composed from its executed copy and written (if changed)."""
    page, kinds, figures = compose(edition, notebook_id, executed)
    path = settings.SOURCES / edition / "notebooks" / f"{notebook_id}.ipynb"
    write_if_changed(path, nbformat.writes(page) + "\n")
    return Page(edition, notebook_id, path, kinds, figures)
