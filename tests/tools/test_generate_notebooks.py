"""The generation step tags exactly the cells that fail while exercises are unanswered."""

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tools import generate_notebooks as gen


def _grade(source, **meta):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"schema_version": 3, "locked": False, "grade": False, "solution": False, **meta}
    return cell


def test_tags_answers_tests_and_their_users_transitively():
    nb = new_notebook(
        cells=[
            new_markdown_cell("# title"),
            new_code_cell("import jax\nx = 1"),  # 1: independent
            _grade(
                "def scaled_sum(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()", solution=True, grade_id="a"
            ),  # 2: defines only
            new_code_cell("result = scaled_sum(x)"),  # 3: uses the answer
            new_code_cell("print(result)"),  # 4: uses 3's result
            new_code_cell("print(x + 1)"),  # 5: independent
            _grade('"""checks"""\nassert True', grade=True, locked=True, grade_id="t", points=1),  # 6: test
            _grade("# YOUR CODE HERE\nraise NotImplementedError()", solution=True, grade_id="b"),  # 7: raises
            new_code_cell("%timeit x\nlen([x])"),  # 8: magic, independent
        ]
    )
    assert gen.tag_cells_that_must_raise(nb) == [3, 4, 6, 7]
    assert nb.cells[3].metadata["tags"] == ["raises-exception"]
    assert "tags" not in nb.cells[5].metadata


def test_tagging_is_idempotent():
    nb = new_notebook(cells=[_grade('"""t"""\nassert 0', grade=True, locked=True, grade_id="t", points=1)])
    gen.tag_cells_that_must_raise(nb)
    gen.tag_cells_that_must_raise(nb)
    assert nb.cells[0].metadata["tags"] == ["raises-exception"]


def test_a_cell_that_only_uses_a_failed_cells_results_is_a_knock_on_error():
    nb = new_notebook(
        cells=[
            _grade("def train(p):\n    # YOUR CODE HERE\n    raise NotImplementedError()", solution=True, grade_id="a"),
            new_code_cell("losses = train(1)"),  # 1: runs the answer
            new_code_cell("plot(losses)"),  # 2: knock-on
            new_code_cell("summary = train(2)\nplot(summary)"),  # 3: one cell: fine
            _grade('"""t"""\nassert train(0)', grade=True, locked=True, grade_id="t", points=1),  # 4: test
            new_code_cell("import numpy as np\nplot(np.arange(3))"),  # 5: independent
        ]
    )
    assert gen.tag_cells_that_must_raise(nb) == [1, 2, 3, 4]
    assert gen.knock_on_cells(nb) == [2]
    assert gen.red_cell_summary(nb) == "4 cells fail unanswered (1 test cells, 3 that run an answer)"


def test_the_released_notebooks_have_no_knock_on_errors():
    """Unanswered notebooks stay readable: every failing cell is a test or runs an answer itself."""
    for path in sorted(gen.NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert gen.knock_on_cells(nb) == [], f"{path.name}: knock-on cells {gen.knock_on_cells(nb)}"


def test_the_chinese_editions_figure_code_says_what_its_figures_say():
    """Issue 35: a plot call's title=, note= and *_label= are written in Chinese in the Chinese edition's code,
    as the figure draws them (namedaxes.po), not in English next to a Chinese figure."""
    from courseinfo import labels
    from courseinfo.course import ROOT
    from namedaxes import i18n

    zh = i18n.translator("zh")
    checked = 0
    for path in sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")):
        english = nbformat.read(ROOT / "notebooks" / path.name, as_version=4)
        for cell, en_cell in zip(nbformat.read(path, as_version=4).cells, english.cells, strict=True):
            ours, theirs = (labels.figure_labels(c.source, words=False) for c in (cell, en_cell))
            for label, en_label in zip(ours, theirs, strict=True):
                if zh(en_label.text) != en_label.text:  # a figure word the catalog translates
                    assert label.text == zh(en_label.text), (path.name, label.text)
                    checked += 1
    assert checked >= 15, f"only {checked} translated figure labels in the Chinese notebooks"
