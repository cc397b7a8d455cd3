"""The student workspace (tools/workspace.py): seeded once, never overwritten, merged without losing answers.

Uses the real release of notebook 02 (notebooks/02_scaled_sum.ipynb) as the starting point and
makes a "newer release" from it the way an instructor would: a changed test cell, a changed
explanation, a new cell.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from tools import workspace

ROOT = Path(__file__).resolve().parents[2]

AID = "02_scaled_sum"
RELEASE_NB = ROOT / "notebooks" / f"{AID}.ipynb"
ANSWER = "def scaled_sum(x):\n    return lax.psum(x * 2.0, DEVICES)\n"


def _cell(nb, grade_id=None, cell_id=None):
    for c in nb.cells:
        if grade_id and (c.metadata.get("nbgrader") or {}).get("grade_id") == grade_id:
            return c
        if cell_id and c.get("id") == cell_id:
            return c
    raise KeyError(grade_id or cell_id)


@pytest.fixture
def release(tmp_path) -> Path:
    folder = tmp_path / "release"
    folder.mkdir()
    shutil.copyfile(RELEASE_NB, folder / RELEASE_NB.name)
    return folder


@pytest.fixture
def work(tmp_path, release) -> Path:
    folder = tmp_path / "work"
    workspace.prepare(folder, release)
    return folder


def _student_works(path: Path) -> None:
    """Answer exercise 1, run it (an output), add a scratch cell after it."""
    nb = nbformat.read(str(path), as_version=4)
    answer = _cell(nb, "scaled_sum_answer")
    answer.source = ANSWER
    answer.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
    answer.execution_count = 7
    scratch = nbformat.v4.new_code_cell("print(scaled_sum(jnp.ones(8)))")
    nb.cells.insert(nb.cells.index(answer) + 1, scratch)
    nbformat.write(nb, str(path))


def _new_release(release: Path, *, test_source=None, intro_source=None, drop_answer=None) -> None:
    path = release / RELEASE_NB.name
    nb = nbformat.read(str(path), as_version=4)
    if test_source is not None:
        _cell(nb, "scaled_sum_total").source = test_source
    if intro_source is not None:
        _cell(nb, cell_id="md-double").source = intro_source
    if drop_answer is not None:
        nb.cells.remove(_cell(nb, drop_answer))
    nbformat.write(nb, str(path))


def test_prepare_seeds_once_and_never_overwrites(tmp_path, release):
    work = tmp_path / "work"
    report = workspace.prepare(work, release)
    assert report["seeded"] == [AID]
    seeded = work / RELEASE_NB.name
    assert seeded.read_bytes() == RELEASE_NB.read_bytes()
    seeded.write_text(seeded.read_text().replace("raise NotImplementedError()", "return 1", 1))
    mine = seeded.read_bytes()
    _new_release(release, test_source='"""changed"""\nassert True\n')
    report = workspace.prepare(work, release)
    assert report == {"seeded": [], "newer": [AID]}, "a changed release is announced, not copied"
    assert seeded.read_bytes() == mine
    report = workspace.prepare(tmp_path / "class", release, seed=False)
    assert report["seeded"] == [] and not list((tmp_path / "class").glob("*.ipynb"))


def test_prepare_refuses_a_file_as_workspace(tmp_path, release):
    target = tmp_path / "work"
    target.write_text("not a folder")
    with pytest.raises(workspace.WorkspaceError, match="not a folder"):
        workspace.prepare(target, release)
    assert target.read_text() == "not a folder"


def test_update_keeps_answers_and_takes_the_changed_test_cell(work, release):
    path = work / RELEASE_NB.name
    _student_works(path)
    before = path.read_bytes()
    new_test = '"""`scaled_sum` sums x * 2.0 over \'devices\'."""\nq.scaled_sum.check(scaled_sum)  # v2\n'
    _new_release(release, test_source=new_test, intro_source="Doubling is local work (v2).")
    plan = workspace.plan_update(work, release)
    assert list(plan) == [AID]
    result = plan[AID][2]
    assert result.conflicts == [] and result.kept_answers == ["scaled_sum_answer"] and result.kept_added == 1
    backup = workspace.apply_update(work, plan, stamp="t1")
    merged = nbformat.read(str(path), as_version=4)
    answer = _cell(merged, "scaled_sum_answer")
    assert answer.source == ANSWER and answer.execution_count == 7 and answer.outputs[0]["text"] == "ran\n"
    assert _cell(merged, "scaled_sum_total").source == new_test
    assert _cell(merged, cell_id="md-double").source == "Doubling is local work (v2)."
    following = merged.cells[merged.cells.index(answer) + 1]
    assert following.source == "print(scaled_sum(jnp.ones(8)))", "the student's own cell stays where it was"
    assert len(merged.cells) == len(nbformat.read(str(release / RELEASE_NB.name), as_version=4).cells) + 1
    assert (backup / RELEASE_NB.name).read_bytes() == before
    assert workspace.plan_update(work, release) == {}, "after the merge the workspace is up to date"
    _new_release(release, test_source=new_test + "# v3\n")
    second = workspace.apply_update(work, workspace.plan_update(work, release), stamp="t1")
    assert second != backup and (backup / RELEASE_NB.name).read_bytes() == before, "a backup is never overwritten"


def test_update_keeps_an_edit_the_release_did_not_touch(work, release):
    path = work / RELEASE_NB.name
    nb = nbformat.read(str(path), as_version=4)
    _cell(nb, cell_id="md-double").source = "my own notes"
    nbformat.write(nb, str(path))
    _new_release(release, test_source='"""v2"""\nq.scaled_sum.check(scaled_sum)\n')
    plan = workspace.plan_update(work, release)
    assert plan[AID][2].conflicts == []
    workspace.apply_update(work, plan, stamp="t1")
    assert _cell(nbformat.read(str(path), as_version=4), cell_id="md-double").source == "my own notes"


def test_update_refuses_conflicts_without_yes_and_backs_up_with_yes(work, release, capsys):
    path = work / RELEASE_NB.name
    nb = nbformat.read(str(path), as_version=4)
    _cell(nb, cell_id="md-double").source = "my own notes"
    nbformat.write(nb, str(path))
    before = path.read_bytes()
    _new_release(release, intro_source="the instructor's new text")
    assert workspace.main(["update", str(work), "--release", str(release)]) == 1
    out = capsys.readouterr().out
    assert "would not survive" in out and "you edited it and the new release changed it" in out
    assert path.read_bytes() == before and not (work / workspace.BACKUP_DIR).exists(), "refused: nothing written"
    assert workspace.main(["update", str(work), "--release", str(release), "--yes"]) == 0
    backups = list((work / workspace.BACKUP_DIR).glob(f"*/{RELEASE_NB.name}"))
    assert len(backups) == 1 and backups[0].read_bytes() == before
    assert _cell(nbformat.read(str(path), as_version=4), cell_id="md-double").source == "the instructor's new text"


def test_a_removed_answer_cell_is_a_conflict(work, release):
    path = work / RELEASE_NB.name
    _student_works(path)
    _new_release(release, drop_answer="global_max_share_answer")
    result = workspace.plan_update(work, release)[AID][2]
    assert result.conflicts == [], "an unanswered stub that disappears loses nothing"
    nb = nbformat.read(str(path), as_version=4)
    _cell(nb, "global_max_share_answer").source = "def global_max_share(x):\n    return x\n"
    nbformat.write(nb, str(path))
    result = workspace.plan_update(work, release)[AID][2]
    assert any("global_max_share_answer" in c and "no longer has" in c for c in result.conflicts)


def test_merge_without_a_base_is_conservative(work, release):
    """A fetched assignment (nbgrader layout) has no recorded base: any differing edit is a conflict."""
    fetched = work / AID / f"{AID}.ipynb"
    fetched.parent.mkdir()
    (work / RELEASE_NB.name).rename(fetched)
    (work / workspace.BASE_DIR / RELEASE_NB.name).unlink()
    nb = nbformat.read(str(fetched), as_version=4)
    _cell(nb, "scaled_sum_answer").source = ANSWER
    _cell(nb, cell_id="md-double").source = "my own notes"
    nbformat.write(nb, str(fetched))
    plan = workspace.plan_update(work, release)
    mine, _, result = plan[AID]
    assert mine == fetched and result.kept_answers == ["scaled_sum_answer"]
    assert len(result.conflicts) == 1 and "md-double" not in result.conflicts[0] and "my own" in result.conflicts[0]


def test_unreadable_workspace_notebook_is_reported_and_left_alone(work, release):
    path = work / RELEASE_NB.name
    path.write_text("{ not json")
    _new_release(release, test_source='"""v2"""\n')
    with pytest.raises(workspace.WorkspaceError, match="not a readable notebook"):
        workspace.plan_update(work, release)
    assert path.read_text() == "{ not json"


def test_new_release_notebook_is_added_without_touching_others(work, release):
    other = copy.deepcopy(nbformat.read(str(RELEASE_NB), as_version=4))
    nbformat.write(other, str(release / "07_new.ipynb"))
    plan = workspace.plan_update(work, release)
    assert list(plan) == ["07_new"] and plan["07_new"][2] is None
    workspace.apply_update(work, plan, stamp="t1")
    assert (work / "07_new.ipynb").is_file() and not (work / workspace.BACKUP_DIR).exists()


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs a git checkout to ask git what it ignores")
def test_workspaces_are_ignored_by_git():
    for path in (
        "work/02_scaled_sum.ipynb",
        "work-alice/02_scaled_sum/02_scaled_sum.ipynb",
        "work/.nbgrader_cache/x/timestamp.txt",
    ):
        assert subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0, path


# ------------------------------------------------------------------ the Chinese edition (work/zh/)
ZH_RELEASE_NB = ROOT / "notebooks" / "zh" / f"{AID}.ipynb"


def _zh_release_nb():
    """notebooks/zh/02 when generated; until then the English release marked "zh" with Chinese prose."""
    if ZH_RELEASE_NB.is_file():
        return nbformat.read(str(ZH_RELEASE_NB), as_version=4)
    nb = nbformat.read(str(RELEASE_NB), as_version=4)
    nb.metadata["namedaxes"] = {"language": "zh"}
    _cell(nb, cell_id="md-double").source = "加倍是本地计算。"
    return nb


@pytest.fixture
def release_zh(release) -> Path:
    (release / "zh").mkdir()
    nbformat.write(_zh_release_nb(), str(release / "zh" / RELEASE_NB.name))
    return release


def test_prepare_seeds_both_editions_and_update_merges_both(tmp_path, release_zh, capsys):
    work = tmp_path / "work"
    assert workspace.main(["prepare", str(work), "--release", str(release_zh)]) == 0
    assert f"zh/{AID}" in capsys.readouterr().out
    zh_path = work / "zh" / RELEASE_NB.name
    assert zh_path.read_bytes() == (release_zh / "zh" / RELEASE_NB.name).read_bytes()
    assert (work / RELEASE_NB.name).read_bytes() == RELEASE_NB.read_bytes()
    assert nbformat.read(str(zh_path), as_version=4).metadata["namedaxes"]["language"] == "zh"
    assert workspace.release_notebooks(work).keys() == {AID}, "the zh folder is not an English assignment"
    _student_works(work / RELEASE_NB.name)
    _student_works(zh_path)
    zh_before = zh_path.read_bytes()
    _new_release(release_zh / "zh", test_source='"""v2"""\nq.scaled_sum.check(scaled_sum)\n')
    assert workspace.main(["update", str(work), "--release", str(release_zh)]) == 0
    out = capsys.readouterr().out
    assert f"zh/{AID}: 1 answer(s) kept" in out and f"  {AID}:" not in out, "only the changed edition merges"
    merged = nbformat.read(str(zh_path), as_version=4)
    assert _cell(merged, "scaled_sum_answer").source == ANSWER
    assert _cell(merged, "scaled_sum_total").source == '"""v2"""\nq.scaled_sum.check(scaled_sum)\n'
    backups = list((work / "zh" / workspace.BACKUP_DIR).glob(f"*/{RELEASE_NB.name}"))
    assert len(backups) == 1 and backups[0].read_bytes() == zh_before
    assert not (work / workspace.BACKUP_DIR).exists(), "the English notebook did not change: no backup"
    merged_bytes = zh_path.read_bytes()
    assert workspace.main(["prepare", str(work), "--release", str(release_zh)]) == 0
    assert zh_path.read_bytes() == merged_bytes, "make lab never writes over the student's Chinese notebook"


def test_a_conflict_in_one_edition_stops_the_merge_of_both(tmp_path, release_zh, capsys):
    work = tmp_path / "work"
    workspace.prepare(work, release_zh)
    zh_path, en_path = work / "zh" / RELEASE_NB.name, work / RELEASE_NB.name
    nb = nbformat.read(str(zh_path), as_version=4)
    _cell(nb, cell_id="md-double").source = "我的笔记"
    nbformat.write(nb, str(zh_path))
    _new_release(release_zh / "zh", intro_source="新的说明")
    _new_release(release_zh, test_source='"""v2"""\n')
    before = (zh_path.read_bytes(), en_path.read_bytes())
    assert workspace.main(["update", str(work), "--release", str(release_zh)]) == 1
    assert f"zh/{AID}: markdown cell" in capsys.readouterr().out
    assert (zh_path.read_bytes(), en_path.read_bytes()) == before, "refused: neither edition written"
    assert workspace.main(["update", str(work), "--release", str(release_zh), "--yes"]) == 0
    assert _cell(nbformat.read(str(zh_path), as_version=4), cell_id="md-double").source == "新的说明"
    assert _cell(nbformat.read(str(en_path), as_version=4), "scaled_sum_total").source == '"""v2"""\n'


def test_an_edition_is_merged_only_into_a_workspace_that_has_it(tmp_path, release_zh):
    """Class mode: a student who never fetched the Chinese course gets no work-ID/zh/ from update."""
    work = tmp_path / "work-alice"
    workspace.prepare(work, release_zh, seed=False)
    assert not (work / "zh").exists()
    assert workspace.main(["update", str(work), "--release", str(release_zh), "--yes"]) == 0
    assert not (work / "zh").exists() and (work / RELEASE_NB.name).is_file()
    (work / "zh").mkdir()
    elsewhere = tmp_path / "outbound-zh"
    shutil.copytree(release_zh / "zh", elsewhere)
    assert workspace.main(["update", str(work), "--release", str(release_zh), "--edition", f"zh={elsewhere}"]) == 0
    assert (work / "zh" / RELEASE_NB.name).read_bytes() == (elsewhere / RELEASE_NB.name).read_bytes()
    assert workspace.main(["update", str(work), "--release", str(release_zh), "--edition", "fr=x"]) == 1
