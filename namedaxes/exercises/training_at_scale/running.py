"""How notebook 10's answers run: their errors in this notebook's words (the core translates the rest)."""

from __future__ import annotations

from namedaxes.checking import exercises_for, first_line

from . import text
from .text import say

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)


def rules(name: str):
    def rule(err: BaseException) -> str | None:
        text, first = str(err), first_line(err)
        if isinstance(err, ValueError) and "does not match the specs of the input" in text:
            return say("in_specs", name=name, first=first)
        if type(err).__name__ == "ShardingTypeError":
            return say("explicit", name=name, first=first)
        return None

    return (rule,)
