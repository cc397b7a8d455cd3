"""Words for the judge's data: a `Reason` (a verdict, a phrase, literal text) as a sentence in the
reader's language.

The judge (`autograder/judge/`) decides and says *what* it found as records (`reasons.Verdict`,
`Phrase`, `Words`): a kind from a closed set and its fields. This module is the one place those
become words, when a file is published (grades.csv, results.json, the feedback page, the
gradebook's comments): each kind's sentence is its `messages.TEXT` template, in the language asked
for (the submission's, `Row.language`), through the helper package's catalog.

The run's phrases (`run/`: time-outs, kernel deaths, limits, output caps, the pool's "not run" rows)
carry their numbers as numbers; how each is written is said here (`NUMBERS`: "12 s", "(6 s)",
"100,000 characters"), the same in every language.

How a verdict reads: "results differ from the reference on hidden inputs (<first finding>;
<second finding>; and N more)": at most `SHOWN` findings, the rest counted (a verdict whose findings
say themselves what went wrong, such as a scorer timeout, has no such introduction). A phrase about
a program case reads "<case>: <sentence>" unless its sentence names the case itself.

Threat model: literal fields may hold student-controlled text (names, error texts), already bounded
by the judge. They are inserted into a template once (`messages.text`: a student's "{0}" stays
literal) and never formatted again; escaping for a page is the page's job (`inert`).
"""

from __future__ import annotations

from datetime import datetime

from ..messages import TEXT, current, text, translate
from ..reasons import MISTAKE_ARG, Field, Kind, Phrase, Reason, Verdict, Words
from ..records import Late
from .course_hints import mistake_text

__all__ = ["say", "say_late", "duration", "SHOWN", "NUMBERS"]

SHOWN = 2  # findings a verdict shows; the others are counted ("; and 2 more")

# the work findings whose figures are numbers: the ratios as they are, the figures with thousands separators
WORK_FIGURES = (
    *(Kind.WORK_FLOPS, Kind.WORK_ARITHMETIC, Kind.WORK_REDUCED),
    *(Kind.WORK_PEAK, Kind.WORK_LARGEST, Kind.WORK_SENT),
)
# how a phrase's number field is written, by (kind, field); any other number: str()
NUMBERS = {
    (Kind.BUDGET_NOTEBOOK, "seconds"): "{:g}",
    (Kind.BUDGET_LEFT, "total"): "{:g}",
    (Kind.BUDGET_LEFT, "left"): "{:.0f}",
    (Kind.RAN_LONGER, "seconds"): "{:g}",
    (Kind.OUTPUT_NOTEBOOK_CAP, "limit"): "{:,}",
    (Kind.OUTPUT_CELL_CAP, "limit"): "{:,}",
    (Kind.BUDGET_SPENT_ELSEWHERE, "seconds"): "{:g}",
    (Kind.WORKER_HUNG, "seconds"): "{:.0f}",
    **{(kind, name): "{:g}" for kind in WORK_FIGURES for name in ("ratio", "factor")},
    (Kind.WORK_OVERLAP, "got"): "{:.0f}",
    (Kind.WORK_OVERLAP, "want"): "{:.0f}",
    **{(kind, name): "{:,.0f}" for kind in WORK_FIGURES for name in ("got", "want")},
}


def say(reason: Reason | Field, lang: str | None = None, shown: int = SHOWN) -> str:
    """`reason` in words, in `lang` (None: the current language, `messages.speaking`); a verdict shows
    its first `shown` findings."""
    if isinstance(reason, Verdict):
        return _verdict(reason, lang, shown)
    if isinstance(reason, Phrase):
        if reason.kind is Kind.KNOWN_MISTAKE:
            return _known_mistake(reason, lang)
        fields = {name: _field(reason.kind, name, value, lang) for name, value in reason.fields}
        if "{case}" in TEXT[reason.kind.value]:
            return text(reason.kind.value, lang, case=reason.case, **fields)
        sentence = text(reason.kind.value, lang, **fields)
        return f"{reason.case}: {sentence}" if reason.case else sentence
    if isinstance(reason, Words):
        return reason.sep.join(say(part, lang) for part in reason.parts)
    return str(reason)


def _field(kind: Kind, name: str, value: Field, lang: str | None) -> str:
    form = NUMBERS.get((kind, name))
    if form is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        return form.format(value)
    return say(value, lang)


def _known_mistake(found: Phrase, lang: str | None) -> str:
    """'<key>: values differ. <the exercise's sentence for this mistake>': the sentence its visible check says,
    from the exercise module's TEXT (`course_hints.mistake_text`), in `lang` through the course's catalog, its
    fields put in once; plain "values differ" when the module has no such sentence."""
    key = say(found.get("key"), lang)
    english = mistake_text(str(found.get("module")), str(found.get("mistake")))
    args = {n.removeprefix(MISTAKE_ARG): say(v, lang) for n, v in found.fields if n.startswith(MISTAKE_ARG)}
    diagnosis = ""
    for template in (translate(english, lang or current()), english) if english else ():
        try:
            diagnosis = template.format(**args)
            break
        except (KeyError, IndexError, ValueError):
            continue
    if not diagnosis:
        return text("values_differ", lang, key=key)
    return text("known_mistake", lang, key=key, diagnosis=diagnosis)


def _verdict(verdict: Verdict, lang: str | None, limit: int) -> str:
    if verdict.passed:
        return ""
    diffs = verdict.differences
    shown = "; ".join(say(d, lang).rstrip(".。") for d in diffs[:limit])  # "…at position 1; pmap_5: …", not ".;"
    more = text("and_more", lang, n=len(diffs) - limit) if len(diffs) > limit else ""
    if not verdict.on_hidden_inputs:
        return f"{shown}{more}"
    return f"{text('hidden_inputs', lang)} ({shown}{more})"


def _moment(iso: str, tz) -> str:
    """A time in the zone `tz`, the zone named: "2026-12-12 13:00 UTC+01:00" (its seconds where it has some)."""
    moment = datetime.fromisoformat(iso).astimezone(tz)
    shown = f"{moment:%Y-%m-%d %H:%M:%S}" if moment.second else f"{moment:%Y-%m-%d %H:%M}"
    return f"{shown} {moment.tzname() or ''}".rstrip()


def duration(seconds: float, lang: str | None = None) -> str:
    """A delay in words: "45 s" under a minute, "12 min 5 s" under an hour, else "1 d 13 h 1 min" (parts
    that are 0 left out)."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return text("duration_seconds", lang, n=seconds)
    minutes = seconds // 60
    if minutes < 60:
        parts = [("duration_minutes", minutes), ("duration_seconds", seconds % 60)]
    else:
        parts = [
            ("duration_days", minutes // 1440),
            ("duration_hours", minutes // 60 % 24),
            ("duration_minutes", minutes % 60),
        ]
    return " ".join(text(key, lang, n=n) for key, n in parts if n)


def _percent(fraction: float) -> str:
    return f"{round(fraction * 100, 4):g} %"


def _rule(late: Late, lang: str | None) -> str:
    """The course's rule and what it gave this hand-in: the days, the rate, the cap, the points off."""
    if late.days == 0:
        return text("late_rule_grace", lang, minutes=f"{late.grace_minutes:g}")
    if late.per_day <= 0:
        return text("late_rule_no_penalty", lang)
    percent, cap = _percent(late.per_day), _percent(late.cap)
    if late.grace_minutes:
        head = text("late_rule_head_grace", lang, minutes=f"{late.grace_minutes:g}", percent=percent, cap=cap)
    else:
        head = text("late_rule_head", lang, percent=percent, cap=cap)
    capped = late.days * late.per_day > late.cap + 1e-9
    said = text(
        "late_rule_capped" if capped else "late_rule",
        lang,
        head=head,
        percent=percent,
        cap=cap,
        days=late.days,
        max_score=f"{late.max_score:g}",
        penalty=f"{late.rule_penalty:g}",
    )
    if late.penalty < late.rule_penalty - 1e-9:
        said = text("late_rule_lowered", lang, rule=said, earned=f"{late.penalty:g}")
    return said


def say_late(late: Late, lang: str | None = None, instructor: bool = False) -> str:
    """A late hand-in (or one on time only thanks to an extension) as sentences: when it was handed in, the due
    date with any extension applied, how late, and the course's rule that gave the points off. Every time is
    written in the due date's time zone (the course's), the zone named. The student's page says "your due
    date", the instructor's report (`instructor`) "the student's"."""
    tz = datetime.fromisoformat(late.due).tzinfo
    fields = {"handed_in": _moment(late.handed_in, tz), "due": _moment(late.due, tz)}
    if late.extended and late.course_due:
        course_due = datetime.fromisoformat(late.course_due)
        extension = (datetime.fromisoformat(late.due) - course_due).total_seconds()
        fields |= {"course_due": _moment(late.course_due, tz), "extension": duration(extension, lang)}
        if late.on_time:
            after = (datetime.fromisoformat(late.handed_in) - course_due).total_seconds()
            return text("page_on_time_extended", lang, late=duration(after, lang), **fields)
        key = "report_late_extended" if instructor else "page_late_extended"
        return text(key, lang, late=duration(late.seconds, lang), rule=_rule(late, lang), **fields)
    return text("page_late", lang, late=duration(late.seconds, lang), rule=_rule(late, lang), **fields)
