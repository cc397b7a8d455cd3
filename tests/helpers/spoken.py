"""Test-only: a visible check's failure in the reader's language, and whether a template of an exercise's
`TEXT` is what it says (issue 56: each new diagnosis is proven in both languages)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from namedaxes import i18n

__all__ = ["failure_in", "says"]


def failure_in(lang: str, check: Callable, *args) -> str:
    """The message `check(*args)` fails with when the kernel's language is `lang` (run afresh, not remembered:
    a remembered failure is in the language it was first said in)."""
    i18n.set_language(lang)
    try:
        with pytest.raises(AssertionError) as err:
            check(*args)
    finally:
        i18n.set_language(None)
    return str(err.value)


def says(message: str, text, key: str, lang: str) -> bool:
    """Is `text[key]`, in `lang`, in `message` (every piece of it between its fields)? In Chinese the
    template must be translated, not the English left as it is."""
    i18n.set_language(lang)
    try:
        template = text[key]
    finally:
        i18n.set_language(None)
    if lang != "en" and (template == text.english(key) or not re.search(r"[\u4e00-\u9fff]{4}", template)):
        return False
    return all(piece in message for piece in re.split(r"\{[^}]*\}", template) if piece.strip())
