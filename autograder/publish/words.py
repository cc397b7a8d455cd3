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

from ..messages import TEXT, text
from ..reasons import Field, Kind, Phrase, Reason, Verdict, Words
from ..records import Late

__all__ = ["say", "say_late", "SHOWN", "NUMBERS"]

SHOWN = 2  # findings a verdict shows; the others are counted ("; and 2 more")

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
    **{
        (kind, name): "{:g}"
        for kind in (Kind.WORK_FLOPS, Kind.WORK_PEAK, Kind.WORK_LARGEST, Kind.WORK_SENT)
        for name in ("ratio", "factor")
    },
    (Kind.WORK_OVERLAP, "got"): "{:.0f}",
    (Kind.WORK_OVERLAP, "want"): "{:.0f}",
    **{
        (kind, name): "{:,.0f}"
        for kind in (Kind.WORK_FLOPS, Kind.WORK_PEAK, Kind.WORK_LARGEST, Kind.WORK_SENT)
        for name in ("got", "want")
    },
}


def say(reason: Reason | Field, lang: str | None = None, shown: int = SHOWN) -> str:
    """`reason` in words, in `lang` (None: the current language, `messages.speaking`); a verdict shows
    its first `shown` findings."""
    if isinstance(reason, Verdict):
        return _verdict(reason, lang, shown)
    if isinstance(reason, Phrase):
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


def _verdict(verdict: Verdict, lang: str | None, limit: int) -> str:
    if verdict.passed:
        return ""
    diffs = verdict.differences
    shown = "; ".join(say(d, lang) for d in diffs[:limit])
    more = text("and_more", lang, n=len(diffs) - limit) if len(diffs) > limit else ""
    if not verdict.on_hidden_inputs:
        return f"{shown}{more}"
    return f"{text('hidden_inputs', lang)} ({shown}{more})"


def _moment(iso: str, tz) -> str:
    return datetime.fromisoformat(iso).astimezone(tz).isoformat(" ", "minutes")


def say_late(late: Late, lang: str | None = None) -> str:
    """A late hand-in as one sentence: when, how late, after which due date, and the points off. Times are
    written in the due date's time zone (the course's)."""
    tz = datetime.fromisoformat(late.due).tzinfo
    minutes = int(late.seconds // 60)
    duration = text("late_duration", lang, days=minutes // 1440, hours=minutes // 60 % 24, minutes=minutes % 60)
    key = "page_late_grace" if late.days == 0 else "page_late_extended" if late.extended else "page_late"
    return text(
        key,
        lang,
        handed_in=_moment(late.handed_in, tz),
        late=duration,
        due=_moment(late.due, tz),
        penalty=f"{late.penalty:g}",
        days=late.days,
    )
