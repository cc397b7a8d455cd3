"""The contract of a notebook's sentences, for its exercise tests: every entry of its `TEXT` is used by a check.

A notebook's checks are a package (its `TEXT` in text.py, its checks in the other modules); `unused_text`
reads the checks' source as text.
"""

from __future__ import annotations

import re
from pathlib import Path

from namedaxes.checking.values import SAID_IN_NOTEBOOK_WORDS

SAID = r"\bsay(?:\(\s*|,\s*)\"{key}\""  # `say("key", ...)`, `TEXT.say("key", ...)`, or `say, "key"` handed on
NAMED = r"[\"']{key}[\"']"  # a key named anywhere (through a table of rules, say)


def _checks_source(q) -> str:
    folder = Path(q.__file__).parent
    return "".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.py")) if p.name != "text.py")


def unused_text(q, used: str = SAID) -> list[str]:
    """The keys of `q.TEXT` that none of the notebook's checks uses (`used`: how a use is spelled), itself or
    through a shared helper that says it in the notebook's words (`SAID_IN_NOTEBOOK_WORDS`: `expect_float32`
    says its `result_type`)."""
    body = _checks_source(q)
    helped = {
        key for helper, keys in SAID_IN_NOTEBOOK_WORDS.items() if re.search(rf"\b{helper}\(", body) for key in keys
    }
    return [key for key in q.TEXT if key not in helped and not re.search(used.format(key=re.escape(key)), body)]
