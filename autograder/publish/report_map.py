"""The class report's misconception map: what went wrong, per exercise, grouped, and what to do about it.

    misconception_section(results, info, site="") -> the map's HTML parts ([] when nothing was found)

Each failed cell's `finding` (misconceptions.py: the judge's verdict data, numbers left out; a known mistake
of the exercise, named as its visible check names it, is a finding of its own) is a group key; the students
who lost points on an exercise are grouped by it, largest first. The class-level summary names the three
largest groups of the class to revisit first. Each group says, in English and Chinese, what the judge found,
who (ids on click), the hint that addresses it (course_hints.py: the exercise's own hint, the one it names for
a known mistake, linked to the exercise's hints listed below its table) and the section that teaches the
exercise: linked to the course website's page for that notebook, scrolled to that heading (a URL text
fragment, which needs no knowledge of the site generator's ids), when the site's address is known
(`--site`, or NAMEDAXES_SITE_URL). Findings that say a cell was not answered or could not run are shown
per exercise but are never among the three to revisit (`NOT_MISCONCEPTIONS`).

Size: at most `MAP_GROUPS` groups per exercise, the rest counted; ids are listed once per group. The page
grows with the number of students only through the id lists.

Threat model: ids and labels can come from submissions; every one is escaped (`report_html`). The site's
address is the instructor's; it is escaped, and only http(s) addresses are linked.
"""

from __future__ import annotations

import os
from urllib.parse import quote

from .class_results import MISSING, ClassResults
from .course_hints import Hint, addressing, hints_of, mistakes_of
from .course_info import CourseInfo
from .misconceptions import NOT_MISCONCEPTIONS
from .report_html import both, course_markup, exercise_name, inline_code, shorten
from .report_html import escape as e

__all__ = ["misconception_section", "MAP_GROUPS", "SITE_ENV", "section_href"]

MAP_GROUPS = 8  # groups shown per exercise; the smaller ones are counted
TO_REVISIT = 3
SITE_ENV = "NAMEDAXES_SITE_URL"


def _head(second: str) -> str:
    labels = (
        both("students", "学生"),
        second,
        both("what went wrong", "错在哪里"),
        both("the hint that addresses it", "对应的提示"),
    )
    return '<table><tr><th class="num">' + "</th><th>".join(labels) + "</th></tr>"


def _groups(results: ClassResults) -> dict[tuple[str, str], dict[str, dict]]:
    """(assignment, grade_id) -> group key -> {"finding": the first one seen, "students": [...]}: each failed
    cell's `finding`, data from the judge, grouped; one entry per student and group."""
    groups: dict[tuple[str, str], dict[str, dict]] = {}
    for row in results.rows:
        if row.status == MISSING:
            continue
        for cell in row.cells:
            found = cell.get("finding") if isinstance(cell, dict) else None
            if not isinstance(found, dict) or not found.get("key"):
                continue
            at = groups.setdefault((row.assignment, str(cell.get("grade_id", ""))), {})
            group = at.setdefault(str(found["key"]), {"finding": found, "students": []})
            if row.student not in group["students"]:
                group["students"].append(row.student)
    return groups


def _hints(info: CourseInfo, aid: str, gid: str) -> tuple[tuple[Hint, ...], dict[str, int]]:
    """The exercise's hints, and the hint it names for each of its known mistakes."""
    name, module = info.checks.get(aid, {}).get(gid, ""), info.modules.get(aid, "")
    return (hints_of(module).get(name, ()), mistakes_of(module).get(name, {})) if name else ((), {})


def _hint_id(aid: str, gid: str, number: int) -> str:
    return f"hint-{aid}-{gid}-{number}"


def _hint_cell(found: dict, hints: tuple[tuple[Hint, ...], dict[str, int]], aid: str, gid: str) -> str:
    if found.get("kind") in NOT_MISCONCEPTIONS:
        return ""
    hint = addressing(found, *hints)
    if hint is None:
        return '<span class="muted">' + both("no hint", "没有提示") + "</span>"
    label = both(f"hint {hint.number} of {hint.of}", f"提示 {hint.number}/{hint.of}")
    return f'<a href="#{e(_hint_id(aid, gid, hint.number))}">{label}</a>'


def _group_row(found: dict, students: list[str], of: int, where: str, hint: str) -> str:
    ids = ", ".join(e(s) for s in sorted(students))
    return (
        f'<tr><td class="num">{len(students)} of {of}</td><td>{where}</td>'
        f'<td class="msg">{course_markup(shorten(str(found.get("en", ""))))}<br>'
        f'<span lang="zh-CN">{course_markup(shorten(str(found.get("zh", ""))))}</span>'
        f'<details><summary>{both("students", "学生")}</summary><span class="ids">{ids}</span></details></td>'
        f"<td>{hint}</td></tr>"
    )


def section_href(site: str, aid: str, heading: str) -> str:
    """The course website's page of `aid`, scrolled to `heading` ("" without an http(s) site address)."""
    site = site.strip()
    if not site.startswith(("https://", "http://")) or not heading:
        return ""
    text = heading.replace("`", "")
    return f"{site.rstrip('/')}/notebooks/{quote(aid)}.html#:~:text={quote(text, safe='')}"


def _taught(info: CourseInfo, aid: str, gid: str, site: str) -> list[str]:
    taught = info.sections.get(aid, {}).get(gid, "")
    if not taught:
        return []
    href = section_href(site, aid, taught)
    name = f'<a href="{e(href)}">{inline_code(taught)}</a>' if href else inline_code(taught)
    taught_zh = info.sections_zh.get(aid, {}).get(gid, "") or taught  # the Chinese edition's heading
    href_zh = section_href(f"{site.strip().rstrip('/')}/zh/", aid, taught_zh) if taught_zh != taught else href
    name_zh = f'<a href="{e(href_zh)}">{inline_code(taught_zh)}</a>' if href_zh else inline_code(taught_zh)
    return [
        f'<p class="muted">Taught in the section &ldquo;{name}&rdquo; of {e(aid)}. '
        f'<span lang="zh-CN">讲解见 {e(aid)} 的&ldquo;{name_zh}&rdquo;一节。</span></p>'
    ]


def _hint_list(hints: tuple[Hint, ...], aid: str, gid: str) -> list[str]:
    if not hints:
        return []
    items = "".join(
        f'<li id="{e(_hint_id(aid, gid, h.number))}">{course_markup(h.en)}<br>'
        f'<span lang="zh-CN">{course_markup(h.zh)}</span></li>'
        for h in hints
    )
    return [
        f"<details><summary>{both('the hints of this exercise', '本练习的提示')}</summary><ol>{items}</ol></details>"
    ]


def _summary(groups: dict, results: ClassResults, info: CourseInfo) -> list[str]:
    flat = [
        (len(g["students"]), aid, gid, g)
        for (aid, gid), by_key in groups.items()
        for g in by_key.values()
        if g["finding"].get("kind") not in NOT_MISCONCEPTIONS
    ]
    flat.sort(key=lambda t: (-t[0], t[1], t[2]))
    parts = [_head(both("exercise", "练习"))]
    for n, aid, gid, g in flat[:TO_REVISIT]:
        where = f'<a href="#{e(aid)}">{e(aid)}</a>: {exercise_name(info, aid, gid)}'
        hint = _hint_cell(g["finding"], _hints(info, aid, gid), aid, gid)
        parts.append(_group_row(g["finding"], g["students"], len(results.graded(aid)) or n, where, hint))
    parts.append("</table>")
    return parts


def _exercise_map(aid: str, gid: str, by_key: dict, results: ClassResults, info: CourseInfo, site: str) -> list[str]:
    ranked = sorted(by_key.values(), key=lambda g: (-len(g["students"]), g["finding"]["key"]))
    hints, declared = _hints(info, aid, gid)
    parts = [
        f"<h3>{e(aid)}: {exercise_name(info, aid, gid)}</h3>",
        *_taught(info, aid, gid, site),
        _head(both("property", "性质")),
    ]
    of = len(results.graded(aid))
    for g in ranked[:MAP_GROUPS]:
        hint = _hint_cell(g["finding"], (hints, declared), aid, gid)
        parts.append(_group_row(g["finding"], g["students"], of, e(g["finding"].get("property")), hint))
    if len(ranked) > MAP_GROUPS:
        more = len(ranked) - MAP_GROUPS
        parts.append(
            f'<tr><td colspan="4" class="muted">{both(f"and {more} smaller group(s)", f"另有 {more} 个较小的组")}'
            "</td></tr>"
        )
    parts.append("</table>")
    return parts + _hint_list(hints, aid, gid)


def misconception_section(results: ClassResults, info: CourseInfo, site: str | None = None) -> list[str]:
    """The misconception map: the three largest groups of the class, then each exercise's groups."""
    groups = _groups(results)
    if not groups:
        return []
    site = os.environ.get(SITE_ENV, "") if site is None else site
    parts = [
        '<h2 id="misconceptions">Misconception map <span lang="zh-CN">/ 错误概念分布</span></h2>',
        '<p class="muted">The students who lost points, grouped by the first thing the judge found wrong '
        "(the property, the collective, the layout, or the known mistake whose values the program computes, "
        "in the words the exercise's visible check gives it: the judge's data, not its wording; numbers left "
        'out). Three to revisit in class first:<br><span lang="zh-CN">失分的学生按评分器发现的第一个问题分组'
        "（性质、集合通信操作、布局，或程序算出的数值所对应的已知错误，用练习的可见检查给出的说法：依据评分器的数据而非"
        "措辞，数字略去）。课上最先要讲的三个：</span></p>",
        *_summary(groups, results, info),
    ]
    for (aid, gid), by_key in sorted(groups.items()):
        parts.extend(_exercise_map(aid, gid, by_key, results, info, site))
    return parts
