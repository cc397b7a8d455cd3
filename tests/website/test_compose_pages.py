"""The site's page composer and its pins, without building the site (seconds).

compose_pages.compose is run on the real notebooks with a stand-in for the executed solution:
the solution itself, each code cell given one recognisable output. That shows which cells keep
the solved output, which get a label instead, and that the cells are the student's (stubs, no
hidden tests) in both editions. The built pages are checked in tests/browser/test_site.py.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement

from website import compose_pages, execute_notebooks, landing_pages, settings
from website.compose_pages import CellKind

ROOT = Path(__file__).resolve().parents[2]

IDS = settings.notebook_ids()


def _fake_execution(tmp_path: Path, edition: str, notebook_id: str) -> Path:
    """The solution with one stream output per code cell, naming the cell; one picture in the first."""
    nb = nbformat.read(settings.folder(settings.SOLUTIONS, edition) / f"{notebook_id}.ipynb", as_version=4)
    first = True
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=f"output of {cell.id} in {settings.ROOT}/x.py\n")
            ]
            if first:
                cell.outputs.append(nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="}))
                first = False
    path = tmp_path / f"{edition}-{notebook_id}.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("edition", list(settings.EDITIONS))
@pytest.mark.parametrize("notebook_id", IDS)
def test_pages_have_the_students_cells_and_the_solved_outputs_where_they_belong(tmp_path, edition, notebook_id):
    release = nbformat.read(settings.folder(settings.RELEASE, edition) / f"{notebook_id}.ipynb", as_version=4)
    page, kinds, figures = compose_pages.compose(edition, notebook_id, _fake_execution(tmp_path, edition, notebook_id))
    assert figures == 1
    by_id = {cell.id: cell for cell in page.cells}
    assert [c.id for c in page.cells if c.id != "site-launch"] == [c.id for c in release.cells]
    assert page.cells[1].id == "site-launch" and settings.colab_url(edition, notebook_id) in page.cells[1].source
    seen = set()
    for cell in release.cells:
        if cell.cell_type != "code":
            continue
        shown, kind = by_id[cell.id], kinds[cell.id]
        seen.add(kind)
        assert shown.source == cell.source, f"{cell.id}: the page's code is not the student's"
        assert "BEGIN SOLUTION" not in shown.source and "HIDDEN TESTS" not in shown.source
        texts = "".join(out.get("text", "") for out in shown.outputs)
        labels = [out for out in shown.outputs if "text/html" in out.get("data", {})]
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            assert kind is CellKind.ANSWER and "raise NotImplementedError()" in cell.source
        elif meta.get("grade"):
            assert kind is CellKind.CHECK
        if kind in (CellKind.ANSWER, CellKind.CHECK):
            assert texts == "" and len(labels) == 1, f"{cell.id}: {kind} shows the solved run's output"
        else:
            assert texts == f"output of {cell.id} in x.py\n", f"{cell.id}: the solved output (machine path cut)"
            assert len(labels) == (kind is CellKind.USES_ANSWER)
        if "raises-exception" in cell.metadata.get("tags", []) and kind not in (CellKind.ANSWER, CellKind.CHECK):
            assert kind is CellKind.USES_ANSWER, f"{cell.id} runs an answer but is shown as a demonstration"
    assert {CellKind.ANSWER, CellKind.CHECK, CellKind.DEMO} <= seen, (
        f"{notebook_id}: an exercise notebook without {seen}"
    )


def test_the_progress_cell_is_labelled_as_the_solved_run():
    assert (
        compose_pages.classify(nbformat.v4.new_code_cell("q.progress()"), nbformat.v4.new_code_cell(""))
        is CellKind.USES_ANSWER
    )
    assert (
        compose_pages.classify(nbformat.v4.new_code_cell("progress = 3"), nbformat.v4.new_code_cell(""))
        is CellKind.DEMO
    )


@pytest.mark.parametrize("edition", list(settings.EDITIONS))
def test_the_syllabus_comes_from_the_notebooks(edition):
    entries = [landing_pages.read_entry(edition, nid) for nid in IDS]
    text = landing_pages.syllabus(edition, entries)
    for entry in entries:
        assert entry.title and entry.goals and entry.exercises and entry.points > 0, entry
        assert f"(notebooks/{entry.notebook_id}.ipynb)" in text
    landing = landing_pages.landing(edition, entries)
    assert all(f"notebooks/{nid}" in landing for nid in IDS), "the toctree lists every notebook"


def test_colab_urls_and_a_repository_that_is_not_on_github(monkeypatch):
    assert settings.colab_url("zh", "02_scaled_sum") == (
        f"https://colab.research.google.com/github/{settings.github_path()}/blob/{settings.BRANCH}/"
        f"notebooks/zh/02_scaled_sum.ipynb"
    )
    monkeypatch.setattr(settings, "REPOSITORY", "https://gitlab.com/a/b")
    with pytest.raises(SystemExit, match="https://github.com/OWNER/NAME"):
        settings.colab_url("en", "02_scaled_sum")


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            assert str(req.specifier).startswith("=="), f"{path.name}: {line!r} is not pinned with =="
            pins[re.sub(r"[-_.]+", "-", req.name).lower()] = str(req.specifier)[2:]
    return pins


def test_the_site_lock_holds_the_direct_pins_and_is_what_the_site_venv_has():
    direct, lock = _pins(settings.SITE / "requirements.in"), _pins(settings.SITE / "requirements.txt")
    assert {name: lock.get(name) for name in direct} == direct, "website/requirements.txt is stale: `make site-lock`"
    assert {"sphinx", "myst-nb", "sphinx-book-theme", "sphinx-mathjax-offline"} <= set(direct)
    assert not {"jax", "jaxlib", "nbgrader"} & set(lock), "the site's venv renders; it runs no course code"
    python = ROOT / ".venv-site" / "bin" / "python"
    if not python.exists():
        pytest.skip(".venv-site is not built (`make site-venv`)")
    out = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    installed = {re.sub(r"[-_.]+", "-", n).lower(): v for n, _, v in (ln.partition("==") for ln in out.split())}
    wrong = {n: (v, installed.get(n)) for n, v in lock.items() if installed.get(n) != v}
    assert not wrong, f".venv-site differs from website/requirements.txt (locked, installed): {wrong}"


def test_the_execution_cache_is_keyed_by_the_notebook_and_its_dependencies(tmp_path):
    one, two = tmp_path / "a.ipynb", tmp_path / "b.ipynb"
    one.write_text("{}")
    two.write_text("{ }")
    key = execute_notebooks.cache_path("en", "01_x", one, "deps")
    assert key == execute_notebooks.cache_path("en", "01_x", one, "deps"), "the key is deterministic"
    assert key != execute_notebooks.cache_path("en", "01_x", two, "deps"), "another notebook text, another key"
    assert key != execute_notebooks.cache_path("en", "01_x", one, "other"), "other dependencies, another key"
    assert key.parent.name == "en" and key.name.startswith("01_x.")
    assert execute_notebooks.dependencies_digest() == execute_notebooks.dependencies_digest()


def test_a_solved_notebook_that_raises_stops_the_build_naming_the_cell(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 1"),
            nbformat.v4.new_code_cell("raise ValueError('the course is broken')"),
        ]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    source = tmp_path / "01_broken.ipynb"
    nbformat.write(nb, source)
    with pytest.raises(RuntimeError, match=r"(?s)01_broken.ipynb raised while it was executed.*the course is broken"):
        execute_notebooks._run("en", source, tmp_path / "out" / "01_broken.k.ipynb")
    assert not (tmp_path / "out").exists(), "nothing is cached for a failed execution"


def test_a_figures_text_alternative_is_its_title_as_the_figure_shows_it():
    """The figure's title in the page's language (the plots translate it when drawn); a plot without a title
    uses the site's own words for it; a cell without a plot_* call gets none."""
    from namedaxes import i18n

    source = "plot_device_values(a, b, title=\"lax.psum over 'devices': every device ends with the total\")"
    assert compose_pages.figure_title(source, "en") == "lax.psum over 'devices': every device ends with the total"
    zh = compose_pages.figure_title(source, "zh")
    assert zh and re.search(r"[\u4e00-\u9fff]", zh) and "lax.psum" in zh, zh
    i18n.set_language("zh")
    try:
        assert zh == i18n.gettext("lax.psum over 'devices': every device ends with the total")
    finally:
        i18n.set_language(None)
    assert compose_pages.figure_title("plots.plot_collective_groups(GRID_SHAPE, GRID_AXES)", "zh").startswith("2 × 4")
    assert compose_pages.figure_title("print('no figure')", "en") is None
