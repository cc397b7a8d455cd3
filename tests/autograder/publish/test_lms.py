"""`make export LMS=...` (autograder/publish/lms.py): the graded class as the file each LMS imports, its
columns as each documents them, the roster's ids and names, the late penalty already applied."""

from __future__ import annotations

import csv
import io
import unicodedata

import pytest

from autograder.__main__ import main
from autograder.publish.gradebook import write_gradebook
from autograder.publish.lms import write_export

GRADES = """\
student,assignment,score,max_score,status,reason,late_penalty,handed_in,due
alice,01_axis_names,7,7,ok,,,,
alice,02_scaled_sum,4.5,6,ok,,1.5,2026-12-18T10:00:00+00:00,2026-12-17T23:59:00+01:00
'=HYPERLINK(1),01_axis_names,3,7,ok,,,,
'=HYPERLINK(1),02_scaled_sum,0,6,missing,no 02_scaled_sum.ipynb submitted,,,
bob,01_axis_names,5,7,ok,,,,
"""


@pytest.fixture
def graded(tmp_path):
    """A course whose roster (make roster) names alice and bob, and a graded class OUT."""
    from nbgrader.api import Gradebook

    course, out = tmp_path / "course", tmp_path / "course" / "grades"
    out.mkdir(parents=True)
    (out / "grades.csv").write_text(GRADES)
    db = f"sqlite:///{course / 'gradebook.db'}"
    write_gradebook(db, {}, [])
    with Gradebook(db) as gb:
        gb.update_or_create_student(
            "alice", first_name="Alice", last_name="Liddell", email="a@x.org", lms_user_id="901"
        )
        gb.update_or_create_student("bob", first_name="伟", last_name="张", email="b@x.org")
    return course, out


def read(path) -> list[list[str]]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("\ufeff")  # Excel and the LMSs read UTF-8 names right
    return list(csv.reader(io.StringIO(text[1:])))


def test_canvas_has_its_identity_columns_points_possible_and_one_column_per_assignment(graded):
    course, out = graded
    rows = read(write_export(out, "canvas", course).path)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01_axis_names", "02_scaled_sum"]
    assert rows[1] == ["    Points Possible", "", "", "", "", "7", "6"]
    assert rows[2] == ["Liddell, Alice", "901", "alice", "alice", "", "7", "4.5"]  # after the late penalty
    assert rows[3] == ["张, 伟", "", "bob", "bob", "", "5", ""]  # no row for 02: not graded, left empty
    # a graded student the roster lacks still gets a row; a missing hand-in is a 0; no formula runs
    assert rows[4] == ["'=HYPERLINK(1)", "", "'=HYPERLINK(1)", "'=HYPERLINK(1)", "", "3", "0"]
    assert len(rows) == 5


def test_moodle_has_its_identity_columns(graded):
    course, out = graded
    rows = read(write_export(out, "moodle", course).path)
    assert rows[0] == ["ID number", "Email address", "First name", "Last name", "01_axis_names", "02_scaled_sum"]
    assert rows[1] == ["alice", "a@x.org", "Alice", "Liddell", "7", "4.5"]
    assert rows[2] == ["bob", "b@x.org", "伟", "张", "5", ""]


def test_plain_csv_has_totals(graded):
    course, out = graded
    rows = read(write_export(out, "csv", course).path)
    assert rows[0][-4:] == ["01_axis_names", "02_scaled_sum", "total", "max_total"]
    assert rows[1] == ["alice", "Alice", "Liddell", "a@x.org", "901", "7", "4.5", "11.5", "13"]


def test_the_command_line_writes_into_out_and_refuses_an_unknown_format(graded, capsys):
    course, out = graded
    assert main(["export", "--lms", "canvas", "--course", str(course)]) == 0
    assert (out / "lms-canvas.csv").is_file() and "lms-canvas.csv (canvas)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["export", "--lms", "blackboard", "--course", str(course)])
    assert main(["export", "--lms", "csv", "--course", str(course / "nowhere")]) == 1
    assert "run `make grade" in capsys.readouterr().err


def test_every_export_quotes_an_id_or_name_a_spreadsheet_could_read_as_a_formula(tmp_path):
    """Issue 48: ids beginning with a space, a no-break or ideographic space, or a fullwidth or small `=`/`+`
    were written unquoted (the plain `=1+1` was quoted): in every format, every such text cell starts with `'`."""
    from nbgrader.api import Gradebook

    from autograder.publish.outputs import csv_value

    ids = [" =1+1", "\u00a0=HYPERLINK(1)", "\u3000+1", "\uff1dSUM(1)", "\ufe62cmd", "\ufe6bx", "-2"]
    course, out = tmp_path / "course", tmp_path / "course" / "grades"
    out.mkdir(parents=True)
    lines = ["student,assignment,score,max_score,status,reason,late_penalty,handed_in,due"]
    lines += [f'"{sid}",01_axis_names,3,7,ok,,,,' for sid in ids]
    (out / "grades.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = f"sqlite:///{course / 'gradebook.db'}"
    write_gradebook(db, {}, [])
    with Gradebook(db) as gb:
        gb.update_or_create_student("ann", first_name="\uff1dcmd()", last_name="\u3000@x", email="+a@x.org")
    for fmt in ("canvas", "moodle", "csv"):
        rows = read(write_export(out, fmt, course).path)
        cells = [cell for row in rows[1:] for cell in row]
        risky = [c for c in cells if unicodedata.normalize("NFKC", csv_value(c)).lstrip()[:1] in ("=", "+", "-", "@")]
        assert {csv_value(c) for c in risky} >= set(ids), fmt  # every id is there ...
        assert all(c.startswith("'") for c in risky), (fmt, [c for c in risky if not c.startswith("'")])  # quoted
        names = {"canvas": ["\u3000@x, \uff1dcmd()"], "moodle": ["+a@x.org", "\uff1dcmd()", "\u3000@x"]}
        names["csv"] = names["moodle"]
        assert set(names[fmt]) <= {csv_value(c) for c in risky}, fmt  # ... and the roster's names and emails
    # the roster's student with no grade: 01 left empty, a total of 0 (an int total once crashed the export)
    assert (rows[1][0], rows[1][-3:]) == ("ann", ["", "0", "7"]), rows[1]


def test_refused_entries_get_no_row_and_the_export_says_which(graded, capsys):
    """Issue 58: a refused entry (empty id) was a row with an empty id and score in every export, and ids that
    collide (`carol` beside `carol `) two rows; none gets a row now, and `make export` names each and why."""
    course, out = graded
    refused = [
        ',,0,0,unplaceable,"class/Points Possible: not a usable student id: ...; not graded",,,',
        "carol,,0,0,conflict,\"class/carol: the folders 'carol' and 'carol ' name the same student\",,,",
        "\"carol \",,0,0,conflict,\"class/carol : the folders 'carol' and 'carol ' name the same student\",,,",
    ]
    (out / "grades.csv").write_text(GRADES + "\n".join(refused) + "\n")
    for fmt, ids in (("canvas", 2), ("moodle", 0), ("csv", 0)):
        rows = read(write_export(out, fmt, course).path)
        assert [row[ids] for row in rows[1 + (fmt == "canvas") :]] == ["alice", "bob", "'=HYPERLINK(1)"], fmt
    assert main(["export", "--lms", "canvas", "--course", str(course)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[1:] == [
        "left out of the export (3; see grades.csv and the grading summary):",
        "  '': the name is empty or blank",
        "  'carol': not graded: conflict",
        "  'carol ': not graded: conflict",
    ]


def test_a_roster_student_named_points_possible_gets_no_second_maxima_row(graded):
    from nbgrader.api import Gradebook

    course, out = graded
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_student("Points Possible")
    export = write_export(out, "canvas", course)
    rows = read(export.path)
    assert [r[0] for r in rows].count("    Points Possible") == 1 and "Points Possible" not in [r[2] for r in rows]
    assert list(export.left_out) == ["Points Possible"]
