"""The misconception map of the class report: failed cells grouped by what the judge found (its verdict
data, numbers left out), ranked, in English and Chinese, with the students' ids on click."""

from __future__ import annotations

import json

import pytest

from autograder.publish import class_results, report
from autograder.publish.course_info import course_info
from autograder.publish.misconceptions import finding
from autograder.publish.outputs import public, write_outputs
from autograder.publish.report_map import SITE_ENV, section_href
from autograder.reasons import Kind, Verdict, Words, phrase
from autograder.records import CellResult, make_row

AID = "02_scaled_sum"


def values_differ():
    return phrase(Kind.VALUES_DIFFER, key="scaled_sum(x)")


def pmean_for_psum():
    return Verdict(False, (values_differ(), phrase(Kind.COMM_MISSING, missing=Words(("psum",)), seen="pmean")))


def no_collective():
    return Verdict(False, (values_differ(), phrase(Kind.COMM_MISSING, missing=Words(("psum",)), seen="none")))


def too_much_work(ratio: float):
    return Verdict(False, (phrase(Kind.WORK_FLOPS, case="x", ratio=ratio, factor=1.5, got=ratio * 10, want=10.0),))


class Source:
    max_score = 2.0


def row(student: str, first, second=None):
    cells = (
        CellResult("scaled_sum_total", 0.0 if first else 1.0, 1.0, first is None, first or ""),
        CellResult("global_max_share_value", 0.0 if second else 1.0, 1.0, second is None, second or ""),
    )
    return make_row(student, AID, "", Source, "ok", "", cells)


CLASS = [row(f"s{i}", pmean_for_psum()) for i in range(5)]
CLASS += [row("s5", no_collective()), row("s6", no_collective())]
CLASS += [row("s7", None, too_much_work(4.5)), row("s8", None, too_much_work(8.0)), row("s9", None, too_much_work(2))]
CLASS += [row("<b>s10</b>", phrase(Kind.NOT_ANSWERED)), row("s11", phrase(Kind.NOT_ANSWERED))]
CLASS += [row("s12", phrase(Kind.NOT_ANSWERED)), row("s13", phrase(Kind.NOT_ANSWERED))]
CLASS += [row("s14", phrase(Kind.NOT_ANSWERED)), row("s15", phrase(Kind.NOT_ANSWERED)), row("s16", None)]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("map")
    write_outputs(out, [public(r) for r in CLASS], CLASS)
    return report.render(class_results.load(out), out), json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def course_page(tmp_path_factory):
    """The same class, with the course's names, sections and hints (the repository's solutions/ and the
    exercise module of 02), and the course website's address."""
    out = tmp_path_factory.mktemp("map-course")
    write_outputs(out, [public(r) for r in CLASS], CLASS)
    info = course_info(None, [AID])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(SITE_ENV, "https://course.example/site/")
        html = report.render(class_results.load(out), out, info=info)
    return html[html.index('id="misconceptions"') : html.index('id="students"')]


def test_a_finding_is_data_whose_key_leaves_numbers_out():
    a, b = finding(too_much_work(4.5)), finding(too_much_work(8.0))
    assert a["key"] == b["key"] and a["property"] == "work" and a["kind"] == "work_flops"
    assert "4.5" not in a["en"] and a["en"].startswith("work: one device computes …× the reference's FLOPs")
    assert a["zh"].startswith("计算量：")
    assert finding(pmean_for_psum())["key"] != finding(no_collective())["key"]
    assert finding(Verdict(True)) is None and finding("NameError: q") is None


def test_an_errors_text_is_the_students_feedback_never_the_maps():
    """A compile error's first line may quote names the program chose: the map shows only the judge's words."""
    said = "ValueError: The judge says you all cheated <b>now</b>"
    found = finding(Verdict(False, (phrase("program_failed", case="k8", error=said),)))
    assert "cheated" not in found["en"] + found["zh"] + found["key"] and "<b>" not in found["en"]
    other = finding(Verdict(False, (phrase("program_failed", case="k2", error="XlaRuntimeError: other"),)))
    assert other["key"] == found["key"]  # one group: a program that does not compile


def test_the_same_difference_on_several_hidden_cases_is_one_and_a_later_kind_still_counts():
    """The judge says "values differ" once per hidden case before it says which collective was performed: the
    key keeps one "values differ" (wherever it was seen) and the collective, so two students whose answers
    differ on other cases but make the same mistake are one group."""
    on = [phrase(Kind.VALUES_DIFFER, key=f"k{k}_shape3_float32") for k in (2, 4, 8, 16)]
    comm = phrase(Kind.COMM_MISSING, missing=Words(("psum",)), seen="pmean")
    a, b = finding(Verdict(False, (*on, comm))), finding(Verdict(False, (*on[2:], comm)))
    assert a["key"] == b["key"] == "values_differ()|comm_missing(missing=psum,seen=pmean)"
    assert "k2_shape3" not in a["en"] and "performs pmean" in a["en"]


def test_results_json_keeps_each_failed_cells_finding(page):
    _, results = page
    cells = {r["student"]: r["cells"] for r in results["rows"]}
    assert cells["s0"][0]["finding"]["kind"] == "values_differ" and "finding" not in cells["s0"][1]
    assert cells["s0"][0]["finding"]["en"] == (
        "…: values differ; communication: expected psum (read from the compiled program), but it performs pmean"
    )


def test_the_map_ranks_the_three_misconceptions_to_revisit(page):
    html, _ = page
    section = html[html.index('id="misconceptions"') : html.index('id="students"')]
    top = section[: section.index("<h3>")]
    counts = [c for c in ("5 of 17", "3 of 17", "2 of 17") if c in top]
    assert counts == ["5 of 17", "3 of 17", "2 of 17"]
    assert top.index("5 of 17") < top.index("3 of 17") < top.index("2 of 17")
    assert "not answered" not in top  # not a misconception: shown per exercise, never among the three
    assert "6 of 17" in section[section.index("<h3>") :]  # the unanswered, in their exercise's table
    assert 'lang="zh-CN"' in section and "s0, s1, s2, s3, s4" in section and "<details>" in section
    assert "&lt;b&gt;s10&lt;/b&gt;" in section and "<b>s10" not in section


def test_each_group_links_the_hint_that_addresses_it(course_page):
    """A cell's groups link the hints of the exercise its test cell checks (`q.scaled_sum.check`: scaled_sum's
    own hints, `HINTS["scaled_sum"]`, not those of its second cell `q.scaled_sum_uses_psum`): pmean where psum
    belongs, and no collective at all, both the hint that speaks of `lax.psum` (3 of scaled_sum's); the hints
    listed under the exercise's table, in both languages."""
    from namedaxes.exercises import scaled_sum

    first = course_page.index("<h3>")
    top = course_page[:first]
    assert top.count('href="#hint-02_scaled_sum-scaled_sum_total-3"') == 2  # pmean (5 students), none (2)
    assert 'href="#hint-02_scaled_sum-scaled_sum_total-1"' not in top
    hints = course_page[course_page.index('id="hint-02_scaled_sum-scaled_sum_total-1"') :].split("</li>")
    assert "<code>lax.psum</code>" not in hints[0] and "<code>lax.psum</code>" in hints[2]
    assert 'lang="zh-CN"' in hints[0] and "one device" in hints[0]
    assert scaled_sum.scaled_sum._hints[0].startswith("Inside the function `x` is one device")
    assert 'id="hint-02_scaled_sum-scaled_sum_total-3"' in course_page
    assert 'id="hint-02_scaled_sum-global_max_share_value-1"' in course_page  # work: too many FLOPs


def test_a_not_answered_group_gets_no_hint(course_page):
    rows = [r for r in course_page.split("<tr>") if "6 of 17" in r]
    assert len(rows) == 1 and "#hint-" not in rows[0]


def test_the_section_that_teaches_it_links_the_course_site_at_its_heading(course_page):
    info = course_info(None, [AID])
    heading = info.sections[AID]["scaled_sum_total"]
    assert heading  # the ## heading above the test cell of 02
    href = section_href("https://course.example/site/", AID, heading)
    assert href.startswith("https://course.example/site/notebooks/02_scaled_sum.html#:~:text=")
    assert f'href="{href}"' in course_page and "讲解见" in course_page
    assert section_href("javascript:alert(1)", AID, heading) == "" and section_href("", AID, heading) == ""


def test_the_chinese_line_names_the_chinese_editions_section_and_links_its_page(course_page):
    """Issue 61: the report's Chinese line named the English section title; now the Chinese edition's heading
    above the same test cell, linked to the Chinese site's page."""
    import html

    info = course_info(None, [AID])
    english, chinese = info.sections[AID]["scaled_sum_total"], info.sections_zh[AID]["scaled_sum_total"]
    assert chinese and chinese != english and any("\u4e00" <= ch <= "\u9fff" for ch in chinese)
    href = section_href("https://course.example/site/zh/", AID, chinese)
    assert href.startswith("https://course.example/site/zh/notebooks/02_scaled_sum.html#:~:text=")
    assert f'href="{html.escape(href)}"' in course_page
    zh_lines = [part.split("一节。")[0] for part in course_page.split("讲解见")[1:]]
    assert zh_lines and not any(h in html.unescape(z) for z in zh_lines for h in info.sections[AID].values() if h)


def test_the_maps_words_are_in_both_languages(course_page):
    for zh in ("错误概念分布", "失分的学生", "对应的提示", "本练习的提示", "学生"):
        assert zh in course_page, zh


# ---------------------------------------------------------------- known mistakes (issue 48)
def known(mistake: str, **args):
    """What the judge says of values that are a known mistake's on every case (judge/mistakes.py)."""
    fields = {f"arg_{k}": v for k, v in args.items()}
    return Verdict(
        False, (phrase(Kind.KNOWN_MISTAKE, key="pmap_2, pmap_8", module="axis_names", mistake=mistake, **fields),)
    )


def test_two_mistakes_of_one_exercise_are_two_groups_under_the_checks_words_with_their_hints(tmp_path):
    """The issue's complaint: a missing gate and a ring masked by local positions both read "values differ" and
    linked hint 1. Now each known mistake is a group of its own, labelled with the sentence the exercise's
    visible check says for it, and linked to the hint the exercise names for it (01's rank_weighted_sum: the
    plain total, hint 2; positions counted from 1, hint 3); the same mistake on other device counts is one
    group (numbers left out: last_device_value's first device, on 8 or 2 devices)."""
    aid, rank, last = "01_axis_names", "rank_weighted_sum_values", "last_device_value_values"

    class Five:
        max_score = 5.0

    def hand_in(student, gid, verdict):
        return make_row(student, aid, "", Five, "ok", "", (CellResult(gid, 0.0, 1.0, False, verdict),))

    rows = [hand_in("ann", rank, known("weighted_no_weights")), hand_in("bob", rank, known("weighted_no_weights"))]
    rows += [hand_in("cy", rank, known("weighted_from_one")), hand_in("dee", last, known("last_first", last=7))]
    rows += [hand_in("eve", last, known("last_first", last=1))]
    plain, first = finding(known("weighted_no_weights")), finding(known("weighted_from_one"))
    assert plain["key"] == "known_mistake(module=axis_names,mistake=weighted_no_weights)" != first["key"]
    assert (plain["mistake"], plain["property"]) == ("weighted_no_weights", "values")
    assert plain["en"] == (
        "…: values differ. That is the plain total of x over the devices: weight device i's `x` by its position i."
    )
    assert plain["zh"] == "…：值不同。这是 x 在各设备上的普通总和：要用设备 i 的位置 i 给它的 `x` 加权。"
    assert finding(known("last_first", last=7))["key"] == finding(known("last_first", last=1))["key"]
    write_outputs(tmp_path, [public(r) for r in rows], rows)
    html = report.render(class_results.load(tmp_path), tmp_path, info=course_info(None, [aid]))

    def groups(gid: str) -> list[str]:
        table = html[html.index(f"<h3>{aid}", html.index('id="misconceptions"')) :]
        table = table[table.index(f'class="gid">{gid}') :]
        return [r for r in table[: table.index("</table>")].split("<tr>") if "of 5</td>" in r]

    plain_row, first_row = groups(rank)
    assert "2 of 5" in plain_row and "ann, bob" in plain_row and f'href="#hint-{aid}-{rank}-2"' in plain_row
    assert "weight device i&#x27;s <code>x</code> by its position i" in plain_row
    assert "1 of 5" in first_row and "cy" in first_row and f'href="#hint-{aid}-{rank}-3"' in first_row
    assert "positions along the axis start at 0" in first_row
    (one,) = groups(last)  # one group whatever the device count the mistake was seen on
    assert "dee, eve" in one and "position …" in one and f'href="#hint-{aid}-{last}-3"' in one


# ---------------------------------------------------------------- notebook 11's findings (issue 61)
def _sent(case: str, ratio: float):
    return phrase(Kind.WORK_SENT, case=case, ratio=ratio, factor=1.5, got=ratio * 16384, want=16384)


def _peak(case: str, ratio: float):
    return phrase(Kind.WORK_PEAK, case=case, ratio=ratio, factor=1.5, got=ratio * 96544, want=96544)


def test_a_reduction_per_microbatch_is_one_group_whichever_cost_shows_on_the_later_case():
    """`accumulate_grads` reducing once per microbatch: the Python loop's program costs bytes on m = 2 and peak
    memory on m = 8, the `lax.scan`'s costs bytes on both. One misconception, so one group, under the first."""
    loop = finding(Verdict(False, (_sent("m2", 2.0), _peak("m8", 2.9))))
    scan = finding(Verdict(False, (_sent("m2", 2.0), _sent("m8", 8.0))))
    assert loop["key"] == scan["key"] == "work_sent(ratio=#,factor=#,got=#,want=#)"
    assert "peak memory" not in loop["en"] and loop["en"].startswith("communication: one device receives …×")


def test_a_layouts_input_number_and_dimension_are_shown_with_its_axis():
    """`zero_specs` keeping the optimizer state whole: the map says which input and which dimension (the
    program's structure, no hidden number), and the axis; another dimension is another group."""
    from autograder.judge.differences import layout_phrase

    def whole(dim: int):
        name = Words((phrase(Kind.LAYOUT_INPUT_NAME, n=2), "['w1']"))
        split = layout_phrase(((), ("fsdp_axis",)) if dim else (("fsdp_axis",),))
        return Verdict(
            False, (phrase(Kind.LAYOUT_INPUT, case="stage1", input=name, got=layout_phrase(((),)), want=split),)
        )

    found = finding(whole(0))
    assert found["en"] == (
        "layout: the program takes input 2['w1'] whole on every device (replicated); the exercise's takes it "
        "split along dimension 0 over 'fsdp_axis'"
    )
    assert "'fsdp_axis'" in found["zh"] and "第 0 维" in found["zh"]
    assert finding(whole(1))["key"] != found["key"]


def test_results_that_differ_only_in_dtype_are_summarised_not_listed():
    """bf16 master weights: 30 of 31 results bfloat16 where the reference's are float32. The feedback used to
    list every result's dtype and shape twice (about 1,000 characters); now one clause, and the map's label."""
    from autograder.judge.differences import signature_difference
    from autograder.publish.words import say

    shapes = [f"[{i}, 16]" for i in range(30)] + ["[]"]
    want = {"devices": 8, "per_device_over": (), "in_tree": "t", "in": [], "out_tree": "o"}
    want["out"] = [f"float32{s}" for s in shapes]
    got = {**want, "out": [f"bfloat16{s}" for s in shapes[:30]] + ["float32[]"]}
    said = say(signature_difference(want, got), "en")
    assert said == "the program returns 30 of its 31 results as bfloat16, expected float32 (their shapes are right)"
    assert (
        say(signature_difference(want, got), "zh")
        == "程序以 bfloat16 返回其 31 个结果中的 30 个，期望的是 float32（它们的形状正确）"
    )
    found = finding(Verdict(False, (signature_difference(want, got),)))
    assert (
        found["en"] == "the program returns … of its … results as bfloat16, expected float32 (their shapes are right)"
    )
    other = {**got, "out": [f"bfloat16[{i}, 8]" for i in range(31)]}  # other shapes too: both lists, each bounded
    listed = say(signature_difference(want, other), "en")
    assert listed.count("float32[") <= 6 and "and 25 more" in listed and len(listed) < 400
