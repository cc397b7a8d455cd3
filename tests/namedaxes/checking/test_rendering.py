"""Unit tests of namedaxes/checking/rendering.py.

A failed check shows its message only, in red, with its hint line, wrapped; a passed one prints one green
line.
"""

from __future__ import annotations

import re

import pytest

from namedaxes.checking import (
    CheckFailed,
    Exercise,
    expect_close,
)

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_a_failed_check_renders_as_its_message_only_in_red_with_the_hint_line(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    twice = Exercise("twice", lambda f: expect_close("twice", f(1.0), 2.0), hints=["multiply"], module=__name__)
    globals()["q_twice"] = twice  # the name the hint line uses: this module's attribute
    try:
        with pytest.raises(CheckFailed) as err:
            twice.check(lambda x: x)
    finally:
        del globals()["q_twice"]
    lines = err.value._render_traceback_()
    assert lines[0].startswith("\x1b[") and " ".join(ANSI.sub("", ln).strip() for ln in lines[:-1]) == "✗ " + str(
        err.value
    )
    assert lines[-1] == "Stuck? Run `q.q_twice.hint()` for a hint."
    assert not any("Traceback" in ln or "namedaxes/checking" in ln for ln in lines)
    assert err.value.__cause__ is None and err.value.__suppress_context__  # no chained checker frames
    monkeypatch.setenv("NO_COLOR", "1")
    plain = err.value._render_traceback_()
    assert not any("\x1b" in ln for ln in plain) and " ".join(ln.strip() for ln in plain[:-1]) == "✗ " + str(err.value)


def test_a_long_message_is_wrapped_so_nbgraders_command_line_does_not_cut_it(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    message = (
        "`scaled_sum` returned different values on different devices. Every device should hold the "
        "same result: a collective such as `lax.psum` over 'devices' is missing.\nOn device 3: expected 56."
    )
    lines = CheckFailed(message)._render_traceback_()
    assert all(len(ln) <= 80 for ln in lines) and len(lines) == 4
    assert lines[0].startswith("✗ `scaled_sum` returned") and all(ln.startswith("  ") for ln in lines[1:])
    assert lines[-1] == "  On device 3: expected 56."  # the message's own line break is kept


def test_a_passed_check_prints_one_green_line(capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    Exercise("twice", lambda f: None, module=__name__).check(lambda x: 2 * x)
    out = capsys.readouterr().out
    assert out == "\x1b[32m✓ `twice` passes the visible checks.\x1b[0m\n"
