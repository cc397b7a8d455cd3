"""What a student is told around each exercise: how to check, how to get a hint, and hints that nudge.

Issue 4 asks for "a hint a student can ask for without seeing the solution": a hint may name the
collective, the axis or the notebook section to re-read, but it must not hand over the answer code.
"""

import importlib
import re
from pathlib import Path

import nbformat
import pytest

from namedaxes.checking import Exercise
from namedaxes.checking.values import SAID_IN_NOTEBOOK_WORDS

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "solutions").glob("*.ipynb"))
SOLUTION_BLOCK = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
CHECK_CALL = re.compile(r"\bq\.(\w+)\.check\((\w+)\)")
EXERCISES_IMPORT = re.compile(r"from namedaxes\.exercises import (\w+) as q\b")
CODE_SPAN = re.compile(r"`([^`]+)`")
TITLE = re.compile(r"^# (\d\d) — \S")


def _nb(path):
    return nbformat.read(path, as_version=4)


def _module(nb):
    imports = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    found = EXERCISES_IMPORT.search(imports)
    assert found, "the imports cell should import the notebook's exercise module as q"
    return importlib.import_module(f"namedaxes.exercises.{found.group(1)}")


def _exercises(module):
    """The exercises a notebook's face shows (its check modules load when first asked for: `notebook_face`)."""
    return {name: obj for name in dir(module) if isinstance(obj := getattr(module, name), Exercise)}


def _canon(text):
    """Compare code loosely: one kind of quote, no whitespace."""
    return re.sub(r"\s+", "", text.replace('"', "'"))


def _solution_expressions(nb):
    """The right-hand sides of the reference answer's lines (`return e` -> e, `a = e` -> e)."""
    for cell in nb.cells:
        for block in SOLUTION_BLOCK.findall(cell.source) if cell.cell_type == "code" else ():
            for line in block.splitlines():
                line = line.strip()
                if not line or line.startswith(("#", "def ")):
                    continue
                line = re.sub(r"^return\s+", "", line)
                line = re.sub(r"^[\w, ]+=(?!=)\s*", "", line)
                yield line


def _visible_text(nb):
    """Everything the student can read in the release: markdown and code outside the answers."""
    return "".join(_canon(SOLUTION_BLOCK.sub("", c.source)) for c in nb.cells)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_hints_nudge_without_giving_the_answer(path):
    nb = _nb(path)
    module = _module(nb)
    visible = _visible_text(nb)
    # A line of the answer that the notebook itself never shows must not appear in a hint.
    secrets = [e for e in _solution_expressions(nb) if len(_canon(e)) >= 16 and _canon(e) not in visible]
    for name, exercise in _exercises(module).items():
        assert 2 <= len(exercise._hints) <= 3, f"{module.__name__}.{name} should have 2-3 hints"
        for hint in exercise._hints:
            for span in CODE_SPAN.findall(hint):
                assert not re.search(r"\breturn\b", span), (
                    f"{module.__name__}.{name}: a hint spells out an answer line: `{span}`"
                )
            for secret in secrets:
                assert _canon(secret) not in _canon(hint), (
                    f"{module.__name__}.{name}: a hint contains the answer `{secret}`"
                )


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_every_exercise_says_how_to_check_and_how_to_get_a_hint(path):
    nb = _nb(path)
    exercises = _exercises(_module(nb))
    cells = nb.cells
    answers = [i for i, c in enumerate(cells) if c.cell_type == "code" and SOLUTION_BLOCK.search(c.source)]
    assert answers
    for i in answers:
        answer = re.search(r"^def (\w+)", cells[i].source, re.M).group(1)
        checked = set()
        for cell in cells[i + 1 :]:
            calls = CHECK_CALL.findall(cell.source) if cell.cell_type == "code" else []
            if not calls:
                break
            checked |= {ex for ex, arg in calls if arg == answer}
        assert checked, f"no test cell checks `{answer}` right after its answer cell"
        assert checked <= set(exercises), f"the test cells of `{answer}` call unknown exercises {checked}"
        # the instructions: markdown back to (and including) the exercise's heading
        prose = []
        for cell in reversed(cells[:i]):
            if cell.cell_type == "markdown":
                prose.append(cell.source)
                if "### Exercise" in cell.source:
                    break
        text = "\n".join(prose)
        assert "### Exercise" in text, f"`{answer}` has no exercise heading above it"
        assert "test cell" in text, f"the instructions for `{answer}` should say to run the test cell"
        hints = set(re.findall(r"`q\.(\w+)\.hint\(\)`", text))
        assert hints & checked, f"the instructions for `{answer}` should name `q.<exercise>.hint()`"
        assert hints <= set(exercises), f"the instructions for `{answer}` name a hint that does not exist"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_title_is_number_dash_title(path):
    title = _nb(path).cells[0].source.splitlines()[0]
    found = TITLE.match(title)
    assert found and found.group(1) == path.stem[:2], f"the title should read '# {path.stem[:2]} — ...': {title}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_prose_names_no_path_of_the_authoring_machine(path):
    for cell in _nb(path).cells:
        assert not re.search(r"/(work|tmp|home|root)/", cell.source), cell.source[:200]


def _text_modules():
    import pkgutil

    import namedaxes.checking
    import namedaxes.exercises as pkg

    modules = [namedaxes.checking] + [
        importlib.import_module(f"namedaxes.exercises.{m.name}") for m in pkgutil.iter_modules(pkg.__path__)
    ]
    return [m for m in modules if isinstance(getattr(m, "TEXT", None), dict)]


@pytest.mark.parametrize("module", _text_modules(), ids=lambda m: m.__name__)
def test_text_tables_are_well_formed_and_every_entry_is_used(module):
    """Student-facing sentences live in one TEXT table per module: each template parses and is used."""
    import inspect
    import string

    if hasattr(module, "__path__"):  # a package (namedaxes.checking): its table is used across its modules
        source = "".join(p.read_text(encoding="utf-8") for p in sorted(Path(module.__path__[0]).glob("*.py")))
    else:
        source = inspect.getsource(module)
    for key, template in module.TEXT.items():
        list(string.Formatter().parse(template))  # raises on a malformed template
        uses = source.count(f'"{key}"') + source.count(f"'{key}'") - 1  # minus its own definition
        # or said in the notebook's words by a shared check it calls (`expect_float32`: its `result_type`)
        uses += sum(f"{helper}(" in source for helper, keys in SAID_IN_NOTEBOOK_WORDS.items() if key in keys)
        assert uses >= 1, f"{module.__name__}: TEXT[{key!r}] is never used"


def test_the_core_and_the_first_notebooks_keep_their_sentences_in_text_tables():
    names = {m.__name__ for m in _text_modules()}
    assert {"namedaxes.checking", "namedaxes.exercises.axis_names", "namedaxes.exercises.scaled_sum"} <= names
