"""Two grading runs at once (run/reference_lock.py): the one that waits says whose run holds the reference
and for how long (issue 61: "waiting for another grading run" said neither); a retried reference's line is
cut where a word ends (run/batch.py)."""

from __future__ import annotations

import getpass
import os
import re

from autograder.run.batch import clipped
from autograder.run.reference_lock import ReferenceLock


def test_the_waiting_run_says_whose_run_holds_the_lock_and_for_how_long(tmp_path, capsys):
    held = ReferenceLock(tmp_path, "02_scaled_sum")
    held.acquire()
    try:
        said = ReferenceLock(tmp_path, "02_scaled_sum").holder()
        assert re.fullmatch(
            rf"another grading run \(process {os.getpid()} of '{getpass.getuser()}', running for 0 min\)", said
        )
    finally:
        held.release()
    (tmp_path / "01_axis_names.lock").write_text("")  # an older grader's lock file: nothing to say
    assert ReferenceLock(tmp_path, "01_axis_names").holder() == "another grading run"


def test_a_retried_references_line_is_cut_where_a_word_ends():
    text = "cell `measure` ran past 30 s; " * 20
    short = clipped(text, 100)
    assert len(short) <= 102 and short.endswith(" …") and text.startswith(short[:-2])
    assert short[:-2].split()[-1] in text.split()  # a whole word before the ellipsis
    assert clipped("short", 100) == "short"
