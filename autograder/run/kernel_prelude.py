"""The trusted code every kernel the grader runs gets before its first cell (references, the cache run and
the students'), besides the XLA cache's and the formula cases' own pieces (sandbox/xla_cache.py,
judge/formulas.py)."""

from __future__ import annotations

from namedaxes.grading import JUDGED_OUTSIDE_ENV

__all__ = ["kernel_prelude"]


def kernel_prelude(lang: str) -> str:
    """The kernel's namedaxes messages in `lang` (validated; always set, English too: the grader's working
    folders must not pick a language by their path), and visible checks that leave the judging to the judge
    (`namedaxes.grading.judged_outside`; `Exercise.check` says why)."""
    from ..messages import validate_language

    env = {"NAMEDAXES_LANG": validate_language(lang), JUDGED_OUTSIDE_ENV: "1"}
    return f"import os as _o\n_o.environ.update({env!r})\ndel _o\n"
