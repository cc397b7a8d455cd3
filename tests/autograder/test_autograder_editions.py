"""The Chinese edition is graded exactly like the English one (one real `python -m autograder grade` run).

The course folder of this run is a Chinese course (its source notebook says
`metadata.namedaxes.language = "zh"`, like `build/zh/course`): discovery must grade it against the
English `solutions/02_scaled_sum.ipynb` and use the course's notebook only for prose. The class:
the same right answers and the same wrong answer (pmean for psum), once as an English and once as a
Chinese submission, plus submissions whose language claim is bogus (graded as English).
Expected: identical scores, statuses and per-test verdicts between the languages; the Chinese rows
say `language: zh`, their kernels ran with NAMEDAXES_LANG=zh, their feedback pages carry the
Chinese edition's prose and the grader's words in Chinese where the catalog translates them.

The Chinese notebooks are `solutions/zh/` and `notebooks/zh/` when the generator has made them;
until then, copies of the English ones marked "zh" with one markdown cell and one comment in
Chinese (the test must not depend on another engineer's files to exist).
"""

from __future__ import annotations

import copy
import json
import os

import autograder_specs as specs
import machine
import nbformat
import pytest
from autograder_harness import REPO, grade_cmd, read_csv

from autograder import messages
from autograder.course.discovery import discover_sources, edition_problem
from autograder.records import GraderError

A02 = specs.A02
PROSE = "本练习计算缩放后的总和（中文说明）。"
PROBE = "import os\nprint('kernel language:', os.environ.get('NAMEDAXES_LANG', 'unset'))"
WRONG_SPEC = next(s for s in specs.SPECS if s.student == "mistake_pmean_for_psum")  # its expected verdicts too
WRONG = WRONG_SPEC.answers["scaled_sum_answer"]


def _zh(nb, prose: bool):
    """`nb` as its Chinese edition: A's generated one when it exists, else a marked copy."""
    nb = copy.deepcopy(nb)
    nb.metadata.setdefault("namedaxes", {})["language"] = "zh"
    if prose:
        md = next(c for c in nb.cells if c.cell_type == "markdown")
        md.source = PROSE
        code = next(c for c in nb.cells if c.cell_type == "code")
        code.source = "# 设置设备（注释可以翻译）\n" + code.source
    return nb


def zh_source():
    path = REPO / "solutions" / "zh" / f"{A02}.ipynb"
    if path.is_file():
        return nbformat.read(path, as_version=4), False
    return _zh(nbformat.read(REPO / "solutions" / f"{A02}.ipynb", as_version=4), True), True


def zh_release():
    path = REPO / "notebooks" / "zh" / f"{A02}.ipynb"
    if path.is_file():
        return nbformat.read(path, as_version=4)
    return _zh(specs.release_notebook(A02), False)


def _submission(release, source_nb, wrong: bool, claim=None, unset=False):
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        meta = specs.nb_meta(cell)
        if meta.get("solution"):
            cell.source = specs.solution_code(source_nb, meta["grade_id"])
            if wrong and meta["grade_id"] == "scaled_sum_answer":
                cell.source = WRONG
    nb.cells.insert(specs.find(nb, "scaled_sum_answer") + 1, nbformat.v4.new_code_cell(PROBE))
    if unset:
        nb.metadata.pop("namedaxes", None)
    elif claim is not None:
        nb.metadata["namedaxes"] = claim
    return nbformat.writes(nb)


# student -> (language the row must say, its twin in English)
CLASS = {
    "en_right": "en",
    "zh_right": "zh",
    "en_wrong": "en",
    "zh_wrong": "zh",
    "bogus_list": "en",
    "bogus_code": "en",
    "bogus_type": "en",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("editions")
    course = root / "zh" / "course"
    (course / "source" / A02).mkdir(parents=True)
    zh_nb, made_here = zh_source()
    nbformat.write(zh_nb, str(course / "source" / A02 / f"{A02}.ipynb"))
    english_source = nbformat.read(REPO / "solutions" / f"{A02}.ipynb", as_version=4)
    en_release, zh_rel = specs.release_notebook(A02), zh_release()
    files = {
        "en_right": _submission(en_release, english_source, False),
        "zh_right": _submission(zh_rel, english_source, False),
        "en_wrong": _submission(en_release, english_source, True),
        "zh_wrong": _submission(zh_rel, english_source, True),
        "bogus_list": _submission(zh_rel, english_source, True, claim={"language": ["zh"]}),
        "bogus_code": _submission(zh_rel, english_source, True, claim={"language": "zh\n"}),
        "bogus_type": _submission(zh_rel, english_source, False, claim="zh"),
    }
    sub = root / "class"
    for student, text in files.items():
        (sub / student).mkdir(parents=True)
        (sub / student / f"{A02}.ipynb").write_text(text, encoding="utf-8")
    out = root / "out"
    cache = REPO / "build" / "autograder" / "references"
    proc = machine.run(
        grade_cmd(course, sub, out, cache, "--no-gradebook"),
        cwd=REPO,
        capture_output=True,
        text=True,
        quiet_s=900,
        what="grading the class",
        env={**os.environ, "NAMEDAXES_LANG": "zh"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in read_csv(out / "grades.csv")}
    results = {r["student"]: r for r in json.loads((out / "results.json").read_text())["rows"]}
    return {"rows": rows, "results": results, "out": out, "made_here": made_here, "course": course}


def _verdicts(result):
    return [(c["grade_id"], c["points"], c["max_points"], c["passed"]) for c in result["cells"]]


@pytest.mark.parametrize(
    "en, zh",
    [
        ("en_right", "zh_right"),
        ("en_wrong", "zh_wrong"),
        ("en_wrong", "bogus_list"),
        ("en_wrong", "bogus_code"),
        ("en_right", "bogus_type"),
    ],
)
def test_same_answers_same_scores_in_both_languages(graded, en, zh):
    a, b = graded["rows"][en], graded["rows"][zh]
    assert (a["score"], a["max_score"], a["status"]) == (b["score"], b["max_score"], b["status"]), (a, b)
    assert _verdicts(graded["results"][en]) == _verdicts(graded["results"][zh])


def test_right_is_full_marks_and_wrong_is_not(graded):
    right = graded["rows"]["zh_right"]
    assert float(right["score"]) == float(right["max_score"]) > 0
    cells = graded["results"]["zh_wrong"]["cells"]
    assert {c["grade_id"] for c in cells if c["passed"]} == WRONG_SPEC.passes({c["grade_id"] for c in cells})


@pytest.mark.parametrize("student", sorted(CLASS))
def test_the_language_is_the_validated_claim_and_reaches_the_kernel(graded, student):
    lang = CLASS[student]
    assert graded["results"][student]["language"] == lang
    nb = nbformat.read(str(graded["out"] / "autograded" / student / A02 / f"{A02}.ipynb"), as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    # the grader's own environment says NAMEDAXES_LANG=zh: it must not leak into English kernels
    assert f"kernel language: {lang}" in printed, printed[-500:]


def test_reasons_and_feedback_are_in_the_submissions_language(graded):
    zh_row, en_row = graded["rows"]["zh_wrong"], graded["rows"]["en_wrong"]
    failed = [c["grade_id"] for c in graded["results"]["en_wrong"]["cells"] if not c["passed"]]
    assert failed
    assert messages.text("failed_tests", "en", ids=", ".join(failed)) in en_row["reason"]
    assert messages.text("failed_tests", "zh", ids=", ".join(failed)) in zh_row["reason"]
    zh_page = (graded["out"] / "feedback" / "zh_wrong" / f"{A02}.html").read_text(encoding="utf-8")
    en_page = (graded["out"] / "feedback" / "en_wrong" / f"{A02}.html").read_text(encoding="utf-8")
    for key in ("page_below", "page_passed"):
        assert messages.text(key, "zh") in zh_page and messages.text(key, "en") in en_page
    translated = messages.translate(messages.TEXT["page_below"], "zh") != messages.TEXT["page_below"]
    if translated:  # the catalog has it: the Chinese page must not be English
        assert messages.TEXT["page_below"] not in zh_page
    if graded["made_here"]:  # the edition's prose is the instructor's, rendered
        assert f"<p>{PROSE}</p>" in zh_page and PROSE not in en_page  # rendered, not shown as typed


def test_a_chinese_course_is_graded_against_the_english_source(graded):
    source = discover_sources(graded["course"], [A02])[A02]
    assert source.path == REPO / "solutions" / f"{A02}.ipynb"
    assert "zh" in source.editions and not source.edition_problems


def test_an_edition_with_other_code_is_refused(tmp_path):
    english = nbformat.read(REPO / "solutions" / f"{A02}.ipynb", as_version=4)
    edition = _zh(english, True)
    assert edition_problem(english, edition) is None  # prose and comments may differ
    changed = copy.deepcopy(edition)
    test = changed.cells[specs.find(changed, "scaled_sum_total")]
    test.source = test.source.replace("check(", "check( ", 1) + "\nx = 1"
    assert "other code" in edition_problem(english, changed)
    docstring = copy.deepcopy(edition)  # a test cell's leading docstring is prose: translated, not code
    test = docstring.cells[specs.find(docstring, "scaled_sum_total")]
    assert test.source.startswith('"""`scaled_sum` sums'), test.source[:40]
    test.source = test.source.replace(test.source.split('"""')[1], "`scaled_sum` 沿 'devices' 求和。", 1)
    assert edition_problem(english, docstring) is None
    test.source = test.source.replace('"""\n', '""".upper()\n', 1)  # no longer a docstring alone: code
    assert "other code" in edition_problem(english, docstring)
    moved = copy.deepcopy(edition)
    moved.cells[specs.find(moved, "scaled_sum_total")].metadata["nbgrader"]["points"] = 99
    assert "nbgrader metadata" in edition_problem(english, moved)
    fewer = copy.deepcopy(edition)
    fewer.cells.pop()
    assert "cells" in edition_problem(english, fewer)
    course = tmp_path / "zh" / "course"
    (course / "source" / A02).mkdir(parents=True)
    nbformat.write(changed, str(course / "source" / A02 / f"{A02}.ipynb"))
    with pytest.raises(GraderError, match="not an edition of the reference"):
        discover_sources(course, [A02])


@pytest.mark.parametrize(
    "claim, lang",
    [
        ({"namedaxes": {"language": "zh"}}, "zh"),
        ({"namedaxes": {"language": "en"}}, "en"),
        ({}, "en"),
        ({"namedaxes": "zh"}, "en"),
        ({"namedaxes": {"language": ["zh"]}}, "en"),
        ({"namedaxes": {"language": "ZH"}}, "en"),
        ({"namedaxes": {"language": "zh " * 10000}}, "en"),
        ({"namedaxes": {"language": None}}, "en"),
        ({"namedaxes": {"language": 1}}, "en"),
        ([], "en"),
    ],
)
def test_a_language_claim_is_validated(claim, lang):
    nb = {"metadata": claim, "cells": []} if isinstance(claim, dict) else {"metadata": claim}
    assert messages.submission_language(nb) == lang


def test_a_translation_with_other_placeholders_falls_back_to_english(monkeypatch):
    monkeypatch.setattr(messages, "translate", lambda message, lang: "{nope} 失败")
    assert messages.text("failed_tests", "zh", ids="a, b") == "failed: a, b"
    monkeypatch.setattr(messages, "translate", lambda message, lang: "失败：{ids}")
    assert messages.text("failed_tests", "zh", ids="{0} {ids}") == "失败：{0} {ids}"  # fields are not re-formatted
    with messages.speaking("zh"):
        assert messages.text("failed_tests", ids="x") == "失败：x"
    with messages.speaking("klingon"):
        assert messages.current() == "en"


def test_every_grader_text_is_used_and_its_translation_keeps_the_fields():
    """One table, no dead entries; a translation (when the catalog has one) names the same fields."""
    import re
    import string

    sources = "".join(
        p.read_text(encoding="utf-8") for p in (REPO / "autograder").rglob("*.py") if p.name != "messages.py"
    )
    unused = [
        k
        for k in messages.TEXT
        if not re.search(rf"""\b(text|say)\(\s*["']{k}["']""", sources) and f'"{k}"' not in sources
    ]
    assert not unused, f"entries of autograder.messages.TEXT nothing uses: {unused}"

    def fields(t: str) -> list[str]:
        return sorted({f for _, f, _, _ in string.Formatter().parse(t) if f})

    for key, english in messages.TEXT.items():
        assert fields(messages.translate(english, "zh")) == fields(english), key


def test_an_edition_whose_labels_are_translated_has_the_same_code():
    """The Chinese edition translates the labels its code prints (courseinfo.labels); the grader still finds every
    notebook's cells the English source's, and a label whose f-string field changed is other code."""
    for path in sorted((REPO / "solutions").glob("*.ipynb")):
        english = nbformat.read(path, as_version=4)
        edition = nbformat.read(REPO / "solutions" / "zh" / path.name, as_version=4)
        assert edition_problem(english, edition) is None, path.name
    english = nbformat.read(REPO / "solutions" / "04_gradient_averaging.ipynb", as_version=4)
    edition = nbformat.read(REPO / "solutions" / "zh" / "04_gradient_averaging.ipynb", as_version=4)
    cell = next(c for c in edition.cells if c.get("id") == "p-update-step")
    assert "这一步之前的损失" in cell.source
    cell.source = cell.source.replace("{float(start_loss):.4f}", "{float(start_loss) * 0:.4f}")
    assert "other code" in edition_problem(english, edition)
