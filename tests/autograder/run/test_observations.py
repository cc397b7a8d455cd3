"""The observation folder is emptied and read from the grader's side without following anything a kernel
planted there: links, folders, fifos, oversized files."""

from __future__ import annotations

import json
import os

from autograder.limits import MAX_LOGGED_NAMES, MAX_OBSERVATION_BYTES
from autograder.run.observations import clear_all_observations, harvest_observations, logged_names


def test_harvest_does_not_follow_links(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"axes": ["devices"]}))
    observe = tmp_path / "observe"
    observe.mkdir()
    (observe / "g.json").symlink_to(secret)
    assert harvest_observations(observe, "g") is None
    link = tmp_path / "linkdir"
    link.symlink_to(observe)
    (observe / "h.json").write_text("{}")
    assert harvest_observations(link, "h") is None
    assert harvest_observations(observe, "h") == (None, b"{}")


def test_harvest_reads_regular_files_only_and_only_up_to_the_cap(tmp_path):
    observe = tmp_path / "observe"
    observe.mkdir()
    os.mkfifo(observe / "fifo.json")  # opening it to read would block without O_NONBLOCK
    assert harvest_observations(observe, "fifo") is None
    (observe / "big.npz").write_bytes(b"x" * (MAX_OBSERVATION_BYTES + 1))
    (observe / "big.json").write_text("{}")
    assert harvest_observations(observe, "big") == (None, b"{}"), "the oversized half is dropped"
    (observe / "ok.npz").write_bytes(b"npz")
    assert harvest_observations(observe, "ok") == (b"npz", None)


def test_clearing_removes_what_was_planted_and_nothing_outside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.json").write_text("{}")
    observe = tmp_path / "observe"
    observe.mkdir()
    (observe / "a.json").write_text("{}")
    (observe / "link").symlink_to(outside)
    (observe / "dir").mkdir()
    (observe / "dir" / "inner").symlink_to(outside / "keep.json")
    os.mkfifo(observe / "fifo")
    assert clear_all_observations(observe) == ["a.json", "dir", "fifo", "link"]
    assert os.listdir(observe) == [] and (outside / "keep.json").read_text() == "{}"
    swapped = tmp_path / "swapped"
    swapped.symlink_to(outside)  # the folder itself replaced by a link: nothing is touched
    assert clear_all_observations(swapped) == [] and os.listdir(outside) == ["keep.json"]
    assert clear_all_observations(tmp_path / "missing") == []


def test_the_log_names_a_bounded_number_of_entries_as_ascii():
    names = [f"n\u00e9{i}" for i in range(MAX_LOGGED_NAMES + 3)]
    shown = logged_names(names)
    assert shown.endswith(" and 3 more") and shown.count("'") == 2 * MAX_LOGGED_NAMES and shown.isascii()
