"""Class report for instructors: what to look at before class, and what to do about it.

    python -m autograder.publish.report OUT            # writes OUT/report.html
    python -m autograder.publish.report OUT --course COURSE --output somewhere/report.html
    python -m autograder.publish.report OUT --site https://example.org/course   # link the sections

Reads what `python -m autograder grade --out OUT` wrote:

- `OUT/grades.csv` (student, assignment, score, max_score, status, reason):
  one row per student and assignment, the scores of record;
- `OUT/results.json` (`{"rows": [{..., "cells": [{grade_id, points,
  max_points, passed, reason}, ...]}]}`): the same rows with every test cell;

and, from the course's source notebooks (COURSE/source/<id>/<id>.ipynb; COURSE
defaults to OUT's parent when that is an nbgrader course folder, as in course
mode, else the repository's build/course, else solutions/): the course id for
the title (nbgrader_config.py), each assignment's title (its first heading)
and each exercise's name (the one-line docstring of its test cell).

It writes one self-contained HTML page (CSS inline, histograms as base64 SVG images, report_figures.py):
the students whose runs timed out, crashed or could not be graded; a table with
one row per student (score and status per assignment, linked to the feedback
page); then, per assignment that has graded work: the distribution of total
scores, the points per exercise and the most frequent failure messages.
Assignments nobody handed in are named in one line, not given empty sections.
Submissions that are missing are counted, not averaged in as zeros. Links to
`feedback/<student>/<assignment>.html` are relative, so they work when the
report stays in OUT.

The jobs, a module each: `class_results` parses the two files once into records,
`course_info` reads the course's names for things, `report_figures` draws the histograms,
`report_html` holds the page's pieces (stylesheet, escaping, code spans, links), and
this module lays out the page.

Threat model: student ids, reasons and failure messages come from
submissions. All text is escaped (`inert.html_text`); `code` spans in
docstrings and messages become `<code>` around escaped text; the page carries
`inert.CSP` (no scripts, nothing loaded, images only from data: URLs).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, OrderedDict
from pathlib import Path

from ..records import Late, Status
from .class_results import MISSING, ClassResults, ClassRow, load
from .course_info import CourseInfo, course_info, default_course
from .inert import CSP_META
from .report_figures import MIME as FIGURE_MIME
from .report_figures import exercise_figure, score_counts, total_figure
from .report_html import CSS, failure_key, inline_code
from .report_html import escape as _e
from .report_html import exercise_name as _exercise_name
from .report_html import feedback_href as _feedback_href
from .report_html import feedback_link as _feedback_link
from .report_html import shorten as _shorten
from .report_html import student_list as _students
from .report_map import misconception_section
from .words import say_late

__all__ = [
    "load",
    "render",
    "write_report",
    "failure_key",
    "score_counts",
    "main",
    "ATTENTION_ORDER",
    "CourseInfo",
    "course_info",
    "default_course",
    "inline_code",
    "title_for",
]

# Statuses a submission can end with (autograder.runner); the ones that need a look come first.
ATTENTION_ORDER = (Status.TIMEOUT, Status.KERNEL_DIED, Status.ERROR, Status.UNREADABLE, Status.UNPLACEABLE)
GRADED = Status.OK
NO_SUBMISSION_REASON = "no notebook submitted"
TOP_FAILURES = 5


def _time_limits_section(results: ClassResults) -> list[str]:
    """The time limits each assignment was graded with (they follow its reference's run on this machine),
    and any reference run that ran twice because its first ran out of time: the grader's own words."""
    items = []
    for aid, note in sorted(results.references.items()):
        said = f"{_e(aid)}: {_e(str(note.get('limits', '')))}" if note.get("limits") else _e(aid)
        if note.get("retried"):
            said += f"; <strong>its reference solution ran twice</strong>: {_e(str(note['retried']))}"
        items.append(f"<li>{said}</li>")
    if not items:
        return []
    return [f'<p class="muted">Time limits of this run:</p><ul class="muted">{"".join(items)}</ul>']


def _protections_section(results: ClassResults) -> list[str]:
    """Which safeguards were in force while student code ran; a missing one is said loudly."""
    if not results.protections:
        return []
    missing = [p for p in results.protections if not p.get("available")]
    n = len(results.protections)
    if not missing:
        return [
            f'<p class="muted">Sandbox: all {n} protections were in force while student code ran '
            f"({_e(', '.join(str(p.get('title', p.get('key', ''))) for p in results.protections))}).</p>"
        ]
    items = "".join(
        f"<li><b>{_e(p.get('title', p.get('key', '')))}</b>: {_e(p.get('detail', ''))}</li>" for p in missing
    )
    return [
        f"<h2>Sandbox: {len(missing)} of {n} protections missing</h2>",
        f"<p>Student code ran without these protections on the grading machine:</p><ul>{items}</ul>",
    ]


def _exercise_stats(cells: list[dict]) -> dict:
    earned = [float(c.get("points", 0) or 0) for c in cells]
    maximum = max(float(c.get("max_points", 0) or 0) for c in cells)
    passed = sum(1 for c in cells if c.get("passed"))
    failures: dict[str, list] = OrderedDict()
    for c in cells:
        reason = str(c.get("reason") or "").strip()
        if c.get("passed") or not reason:
            continue
        failures.setdefault(failure_key(reason), []).append((c["_student"], reason))
    top = sorted(failures.values(), key=lambda v: -len(v))[:TOP_FAILURES]
    return {
        "n": len(cells),
        "max": maximum,
        "mean": sum(earned) / len(earned) if earned else 0.0,
        "passed": passed,
        "top": top,
        "kinds": len(failures),
    }


def _graded(results: ClassResults, aid: str) -> list[ClassRow]:
    return results.graded(aid)


# ---------------------------------------------------------------- sections
def _attention_section(results: ClassResults, out: Path | None) -> list[str]:
    attention = [r for r in results.rows if r.status not in (GRADED, MISSING)]
    if not attention:
        return []
    rank = {s: i for i, s in enumerate(ATTENTION_ORDER)}
    attention.sort(key=lambda r: (rank.get(r.status, len(rank)), r.student, r.assignment))
    parts = [
        '<h2 id="attention">Needs attention: timeouts, crashes, ungradable submissions</h2>',
        '<table><tr><th>student</th><th>assignment</th><th>status</th><th class="num">score</th>'
        "<th>what happened</th></tr>",
    ]
    for r in attention:
        parts.append(
            f"<tr><td>{_e(r.student)}</td><td>{_e(r.assignment) or '&mdash;'}</td>"
            f'<td class="warn">{_e(r.status)}</td><td class="num">{r.score:g}/{r.max_score:g}</td>'
            f'<td class="msg">{inline_code(_shorten(r.reason, 600))}'
            f"{_feedback_link(out, r.student, r.assignment)}</td></tr>"
        )
    parts.append("</table>")
    return parts


def _student_cell(row: ClassRow | None, out: Path | None) -> str:
    if row is None or row.status == MISSING:
        return '<td class="missing">missing</td>'
    score = f"{row.score:g}/{row.max_score:g}"
    href = _feedback_href(out, row.student, row.assignment)
    shown = f'<a href="{_e(href)}">{score}</a>' if href else score
    status = "" if row.status == GRADED else f' <span class="warn">{_e(row.status)}</span>'
    late = Late.from_json(row.late)
    if late is not None and late.on_time:
        status += ' <span class="muted">on time by an extension</span>'
    elif row.late_penalty is not None:
        status += f' <span class="warn">late &minus;{row.late_penalty:g}</span>'
    full = (
        ' class="num full"'
        if row.status == GRADED and row.max_score > 0 and row.score >= row.max_score
        else ' class="num"'
    )
    return f"<td{full}>{shown}{status}</td>"


def _late_section(results: ClassResults, out: Path | None) -> list[str]:
    """The hand-ins made after their due date (course/deadlines.py) and those on time only by an extension, each
    with its line: when, the due date with the extension applied, how late, the rule and the points off."""
    rows = [r for r in results.rows if r.late_penalty is not None or r.late is not None]
    rows.sort(key=lambda r: (r.assignment, r.student))
    if not rows:
        return []
    records = {id(r): Late.from_json(r.late) for r in rows}
    late = sum(1 for r in rows if records[id(r)] is None or not records[id(r)].on_time)
    parts = [
        '<h2 id="late">Late hand-ins and extensions</h2>',
        f'<p class="muted">{late} hand-in(s) after their due date (extensions included), '
        f"{len(rows) - late} on time only by an extension; the score is after the penalty. Due dates and the "
        "policy: the course's deadlines.toml and extensions.csv. Times in the due date's time zone.</p>",
        '<table><tr><th>student</th><th>assignment</th><th>what happened</th><th class="num">penalty</th>'
        '<th class="num">score</th></tr>',
    ]
    for r in rows:
        penalty = f"&minus;{r.late_penalty:g}" if r.late_penalty else "0"
        parts.append(
            f"<tr><td>{_e(r.student)}</td><td>{_e(r.assignment)}</td><td>{_e(_late_line(r, records[id(r)]))}</td>"
            f'<td class="num">{penalty}</td>'
            f'<td class="num">{r.score:g}/{r.max_score:g}{_feedback_link(out, r.student, r.assignment)}</td></tr>'
        )
    parts.append("</table>")
    return parts


def _late_line(row: ClassRow, late: Late | None) -> str:
    """A row's late line in English (the report's language), from results.json's record; else its times."""
    if late is not None:
        return say_late(late, "en", instructor=True)
    return f"handed in {row.handed_in}, due {row.due}"


def _similarity_line(out: Path | None) -> list[str]:
    """A link to similarity.html (publish/similarity.py), with how many pairs it lists and how many answers it
    did not compare (too short once the course's own code is taken out: the one way of being right, or the
    reference's way word for word), so that "0 pairs" of a class written the reference's way says so."""
    try:
        data = json.loads((out / "similarity.json").read_text(encoding="utf-8")) if out is not None else None
        pairs = sum(int(r["listed"]) for r in data)
        answers, short = sum(int(r["answers"]) for r in data), sum(int(r["too_short"]) for r in data)
    except (OSError, ValueError, TypeError, KeyError):
        return []
    unread = (
        f"; {short} of the {answers} answers were not compared (too short once the course's own code is taken "
        "out: the reference's way, or the one way of being right)"
        if short
        else ""
    )
    return [
        f"<p>Similar hand-ins: {pairs} pair(s) of answers unusually alike{unread} "
        '(<a href="similarity.html">similarity.html</a>; it reports, it changes no score).</p>'
    ]


def _students_section(results: ClassResults, assignments: list[str], out: Path | None) -> list[str]:
    """One row per student: score (linked to the feedback page) and status per assignment, and the total."""
    by_key = {(r.student, r.assignment): r for r in results.rows if r.assignment}
    students = sorted({r.student for r in results.rows if r.assignment in assignments})
    if not students:
        return []
    head = "".join(f'<th class="num"><a href="#{_e(a)}">{_e(a)}</a></th>' for a in assignments)
    parts = [
        '<h2 id="students">Students</h2>',
        '<p class="muted">Score per assignment (a link opens the feedback page); a status other than '
        "a plain score needs a look. Missing submissions count as 0 in the total.</p>",
        f'<table class="students"><tr><th>student</th>{head}<th class="num">total</th></tr>',
    ]
    maxima = {a: max(r.max_score for r in _graded(results, a)) for a in assignments}
    for student in students:
        rows = [by_key.get((student, a)) for a in assignments]
        total = sum(r.score for r in rows if r is not None and r.status != MISSING)
        parts.append(
            f"<tr><td>{_e(student)}</td>"
            + "".join(_student_cell(r, out) for r in rows)
            + f'<td class="num">{total:g}/{sum(maxima.values()):g}</td></tr>'
        )
    parts.append("</table>")
    return parts


def _assignment_section(results: ClassResults, aid: str, out: Path | None, info: CourseInfo) -> list[str]:
    rows = [r for r in results.rows if r.assignment == aid]
    graded = _graded(results, aid)
    missing = sorted(r.student for r in rows if r.status == MISSING)
    title = info.titles.get(aid, "")
    parts = [f'<h2 id="{_e(aid)}">{_e(aid)}{": " + inline_code(title) if title else ""}</h2>']
    scores = sorted(r.score for r in graded)
    maximum = max(r.max_score for r in graded)
    median = (
        scores[len(scores) // 2] if len(scores) % 2 else (scores[len(scores) // 2 - 1] + scores[len(scores) // 2]) / 2
    )
    full = sum(1 for s in scores if s >= maximum > 0)
    parts.append(
        '<div class="cards">'
        f'<div class="card"><b>{len(graded)}</b>graded</div>'
        f'<div class="card"><b>{sum(scores) / len(scores):.2f}</b>mean of {maximum:g}</div>'
        f'<div class="card"><b>{median:g}</b>median</div>'
        f'<div class="card"><b>{full}</b>full marks</div>'
        f'<div class="card"><b>{len(missing)}</b>missing</div></div>'
    )
    parts.append(
        f'<figure><img class="histogram" alt="{_e(aid)}: histogram of total scores" '
        f'src="data:{FIGURE_MIME};base64,{total_figure(aid, graded)}"></figure>'
    )
    exercises: OrderedDict[str, list[dict]] = OrderedDict()
    for r in graded:
        for c in r.cells:
            if "grade_id" in c:
                exercises.setdefault(str(c["grade_id"]), []).append(dict(c, _student=r.student))
    if exercises:
        parts.append(
            f'<figure><img class="histogram" alt="{_e(aid)}: histograms of points per exercise" '
            f'src="data:{FIGURE_MIME};base64,{exercise_figure(aid, exercises)}"></figure>'
        )
        parts.append(
            '<table><tr><th>exercise</th><th class="num">points</th><th class="num">mean</th>'
            '<th class="num">passed</th><th>most frequent failure messages (students)</th></tr>'
        )
        for gid, cells in exercises.items():
            s = _exercise_stats(cells)
            if s["top"]:
                msgs = "".join(
                    f'<li><span class="msg">{inline_code(_shorten(group[0][1]))}</span> '
                    f'<span class="muted">&mdash; {len(group)}&times;: {_students([g[0] for g in group])}'
                    f"{' (numbers vary)' if len({g[1] for g in group}) > 1 else ''}</span></li>"
                    for group in s["top"]
                )
                more = (
                    f'<span class="muted">{s["kinds"] - len(s["top"])} other message(s)</span>'
                    if s["kinds"] > len(s["top"])
                    else ""
                )
                failures = f"<ol>{msgs}</ol>{more}"
            else:
                failures = '<span class="muted">none</span>'
            parts.append(
                f'<tr><td>{_exercise_name(info, aid, gid)}</td><td class="num">{s["max"]:g}</td>'
                f'<td class="num">{s["mean"]:.2f}</td><td class="num">{s["passed"]}/{s["n"]}</td>'
                f"<td>{failures}</td></tr>"
            )
        parts.append("</table>")
    else:
        parts.append('<p class="muted">No per-exercise results (results.json missing or without cells).</p>')
    if missing:
        parts.append(f'<p class="muted">Missing ({len(missing)}): {_students(missing, limit=40)}</p>')
    return parts


def title_for(info: CourseInfo, assignments: list[str]) -> str:
    """`<course>: class report` (and the assignment, when there is only one)."""
    name = info.course_id or "Course"
    if len(assignments) == 1:
        return f"{name}: class report for {assignments[0]}"
    return f"{name}: class report"


def render(
    results: ClassResults,
    out: Path | None = None,
    title: str | None = None,
    info: CourseInfo | None = None,
    site: str | None = None,
) -> str:
    """The whole report as one HTML string."""
    info = info or CourseInfo()
    with_work = [a for a in results.assignments if _graded(results, a)]
    without = [a for a in results.assignments if a not in with_work]
    title = title or title_for(info, with_work or results.assignments)
    statuses = Counter(r.status for r in results.rows)
    attention = _attention_section(results, out)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        CSP_META,
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">{len(results.students)} student(s), {len(with_work)} assignment(s) with graded work; '
        + ", ".join(f"{_e(k)} {v}" for k, v in sorted(statuses.items()))
        + ".</p>",
    ]
    if with_work:
        parts.append(
            "<p>Assignments: "
            + " &middot; ".join(
                f'<a href="#{_e(a)}">{_e(a)}</a>'
                + (f' <span class="muted">({inline_code(info.titles[a])})</span>' if info.titles.get(a) else "")
                for a in with_work
            )
            + "</p>"
        )
    if without:
        parts.append(f'<p class="muted">No submissions for: {", ".join(_e(a) for a in without)}.</p>')
    if not attention:
        parts.append("<p>Nothing needs attention: every submitted notebook ran to the end within its time limits.</p>")
    parts.extend(attention)
    parts.extend(_similarity_line(out))
    parts.extend(_protections_section(results))
    parts.extend(_time_limits_section(results))
    parts.extend(misconception_section(results, info, site))
    parts.extend(_students_section(results, with_work, out))
    parts.extend(_late_section(results, out))
    for aid in with_work:
        parts.extend(_assignment_section(results, aid, out, info))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(out: Path, output: Path | None = None, course: Path | None = None, site: str | None = None) -> Path:
    out = Path(out)
    results = load(out)
    output = Path(output) if output else out / "report.html"
    output.parent.mkdir(parents=True, exist_ok=True)
    links_from = out if output.resolve().parent == out.resolve() else None
    info = course_info(Path(course) if course else default_course(out), results.assignments)
    output.write_text(render(results, links_from, info=info, site=site), encoding="utf-8")
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.publish.report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("out", type=Path, help="the --out folder of `python -m autograder grade`")
    parser.add_argument("--output", type=Path, default=None, help="where to write the report (default OUT/report.html)")
    parser.add_argument(
        "--course",
        type=Path,
        default=None,
        help="the nbgrader course folder (names and titles; default: OUT/.. if it is one, else build/course)",
    )
    parser.add_argument(
        "--site",
        default=None,
        help="the course website's address, to link each exercise's section (default: $NAMEDAXES_SITE_URL)",
    )
    args = parser.parse_args(argv)
    try:
        path = write_report(args.out, args.output, args.course, args.site)
    except (OSError, ValueError) as err:
        sys.stderr.write(f"autograder.publish.report: error: {err}\n")
        return 1
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
