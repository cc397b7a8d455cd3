"""A classmate can never cost you a point (issue 33), through `make grade` with one worker: one slot,
so the honest classmate's kernel is forked in the very slot the attacker's kernel used, right after it.

The attacker hands in right answers and one added cell, run before any answer: it tries to mark the
slot's roots (a default ACL that makes every later folder read-only, a `user.*` note, the root's mode
and times), floods /tmp and /dev/shm with empty files, and counts the shared XLA cache's hits while
its check compiles the solution's exact text and an equivalent form (a graded kernel's checks only export;
the attacker turns them back on, as any kernel may: they decide nothing). Two parse bombs go in beside it
(one just past MAX_NOTEBOOK_VALUES, one just under it, both ~50 MiB, the largest file read). Each row
is asserted exactly, the honest classmate's full marks, and the grader's peak memory for the bombs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import autograder_specs as specs
import machine
import nbformat
import pytest
from autograder_harness import read_csv, start_grading
from sandbox_helpers import FLOOD

from autograder.course.classroom import grade_command, make_course
from autograder.limits import HANDIN_MAX_BYTES, MAX_NOTEBOOK_BYTES, MAX_NOTEBOOK_VALUES

MARK = "SLOT-ATTACK:"
ATTACK = (
    FLOOD
    + """import ctypes, errno, json, os, struct
from jax import monitoring
libc = ctypes.CDLL(None, use_errno=True)
def setx(path, name, value):
    ctypes.set_errno(0)
    r = libc.setxattr(path.encode(), name.encode(), value, ctypes.c_size_t(len(value)), 0)
    return "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]
read_only = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, 0xFFFFFFFF) for t, p in ((1, 5), (4, 0), (32, 0)))
root = os.getcwd()
seen = {"acl": setx(root, "system.posix_acl_default", read_only), "note": setx(root, "user.note", b"hello")}
seen["flood"] = dict(zip(("/tmp", "/dev/shm"), flood(["/tmp/flood", "/dev/shm/flood"])))
hits = []
monitoring.register_event_listener(lambda event, **kw: hits.append(event))
os.environ.pop("NAMEDAXES_JUDGED_OUTSIDE", None)  # a graded kernel's checks only export: turned back on, they compile
def cache_hits(candidate):
    before = hits.count("/jax/compilation_cache/cache_hits")
    q.scaled_mean.check(candidate)
    return hits.count("/jax/compilation_cache/cache_hits") - before
def exact(x):
    total = lax.psum(jnp.nansum(x * 2.0), axis_name=DEVICES)
    count = lax.psum(jnp.sum(~jnp.isnan(x)), axis_name=DEVICES)
    return (total / count).astype(x.dtype)
def equivalent(x):
    count = lax.psum(jnp.sum(~jnp.isnan(x)), axis_name=DEVICES)
    total = lax.psum(2.0 * jnp.nansum(x), axis_name=DEVICES)
    return (total / count).astype(x.dtype)
def warm_up(x):  # a third form: the check's own programs (inputs, its reference) are compiled with it
    return lax.psum(jnp.nansum(x), axis_name=DEVICES) * 2.0 / lax.psum(jnp.sum(~jnp.isnan(x)), axis_name=DEVICES)
first = cache_hits(warm_up)
seen["hits"] = {"first_check": first, "solution_text": cache_hits(exact), "equivalent_form": cache_hits(equivalent)}
os.utime(root, (86400, 86400))
os.chmod(root, 0o500)
print("SLOT-ATTACK:" + json.dumps(seen))
"""
)


def _bomb(values: int) -> bytes:
    """A released notebook (no answer) whose metadata holds a list of `values` - 1 empty objects, padded
    with one long string to the largest size a submission may have."""
    text = nbformat.writes(specs.release_notebook(specs.A02))
    head = text.rstrip().removesuffix("}")
    from autograder.course.notebooks import json_values

    empties = values - json_values((head + "}").encode(), MAX_NOTEBOOK_VALUES) - 3
    bomb = "[" + ",".join(["{}"] * empties) + "]"
    pad = MAX_NOTEBOOK_BYTES - 1024 - len(head) - len(bomb)
    return f'{head}, "x": {bomb}, "y": "{"a" * pad}"}}'.encode()


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("slot")
    course = make_course(root / "course", (specs.A02,))
    sub = root / "class"
    source = nbformat.read(specs.REPO / "solutions" / f"{specs.A02}.ipynb", as_version=4)
    entries = {
        "a_attacker": specs.notebook_for(
            specs.Spec("a_attacker", "ok", tamper=(specs.add_cells_after("imports", [ATTACK]),)), source, {}
        ),
        "b_bomb_collect_cap": b'{"x": [' + b"{}," * (HANDIN_MAX_BYTES // 3 - 4) + b"{}]}",
        "b_bomb_over": _bomb(MAX_NOTEBOOK_VALUES + 1),
        "b_bomb_under": _bomb(MAX_NOTEBOOK_VALUES - 1000),
        "c_honest": specs.notebook_for(specs.Spec("c_honest", "ok"), source, {}),
    }
    for student, data in entries.items():
        (sub / student).mkdir(parents=True)
        (sub / student / f"{specs.A02}.ipynb").write_bytes(data)
    cmd = grade_command(course, submissions=sub, out=root / "out", cache=root / "cache" / "references", jobs=1)
    proc = start_grading(cmd, root / "tmp")
    _, stderr = machine.communicate(proc, quiet_s=600, what="grading the class")
    assert proc.returncode == 0, stderr[-3000:]
    return root / "out"


def _rows(out: Path) -> dict[str, dict]:
    return {r["student"]: r for r in read_csv(out / "grades.csv")}


def _attack_report(out: Path) -> dict:
    nb = json.loads((out / "autograded" / "a_attacker" / specs.A02 / f"{specs.A02}.ipynb").read_text())
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", ""))
            if MARK in text:
                return json.loads(text.split(MARK, 1)[1].splitlines()[0])
    raise AssertionError("the attack cell printed nothing")


def test_the_honest_classmate_graded_next_in_the_attackers_slot_gets_every_point(graded):
    honest = _rows(graded)["c_honest"]
    assert honest["status"] == "ok" and honest["reason"] == "", honest
    assert float(honest["score"]) == float(honest["max_score"]) == 7.0
    result = {r["student"]: r for r in json.loads((graded / "results.json").read_text())["rows"]}["c_honest"]
    assert all(c["passed"] for c in result["cells"]), result["cells"]


def test_the_attacker_marks_nothing_and_floods_only_up_to_the_caps(graded):
    """Its ACL and note are refused; its flood stops at the inode caps (20,000 inodes each, a few of
    them taken by what JAX and the kernel made there); it keeps the points its right answers earn."""
    seen = _attack_report(graded)
    refused = "ENOTSUP"  # EOPNOTSUPP, the same number on Linux
    assert (seen["acl"], seen["note"]) == (refused, refused)
    for where in ("/tmp", "/dev/shm"):
        count, why = seen["flood"][where]
        assert why == "ENOSPC" and 19_900 <= count < 20_000, (where, count, why)
    row = _rows(graded)["a_attacker"]
    assert row["status"] == "ok" and float(row["score"]) == 7.0, row


def test_the_shared_compile_cache_cannot_tell_the_solutions_text_from_an_equivalent_form(graded):
    """The cache holds the release's programs only (no answer of the solution was compiled into it), so
    the solution's exact text earns as many cache hits as an equivalent form: none. (Before, 2 for the
    solution's text, 0 for the equivalent.) The check's own programs, the same for every answer, are
    library programs the release compiles too: they still come from the cache, on the first check."""
    hits = _attack_report(graded)["hits"]
    assert hits["solution_text"] == hits["equivalent_form"] == 0, hits
    assert hits["first_check"] > 0, hits


def test_a_parse_bomb_is_a_row_with_its_reason_and_costs_the_grader_bounded_memory(graded):
    """At the collect cap (64 MiB, 22 million `{}`: it took the worker to 9.7 GiB and 90 s at 50 MiB), the
    file is too large and never read; just past the value limit it is read but never parsed; just under
    it, it is parsed, and the worker's peak stays within 1 GiB of the honest hand-in's."""
    rows = _rows(graded)
    cap = rows["b_bomb_collect_cap"]
    assert cap["status"] == "unreadable" and float(cap["score"]) == 0, cap
    assert re.search(r"file is too large \(63 MiB; the limit is 50 MiB\)", cap["reason"]), cap
    over = rows["b_bomb_over"]
    assert over["status"] == "unreadable" and float(over["score"]) == 0, over
    assert re.search(rf"too complex to read: more than {MAX_NOTEBOOK_VALUES:,} JSON values", over["reason"]), over
    under = rows["b_bomb_under"]  # read (just under the bound), graded as the empty hand-in it is
    assert under["status"] == "ok" and float(under["score"]) == 0, under
    timings = {t["student"]: t for t in json.loads((graded / "timings.json").read_text())}
    honest = timings["c_honest"]["grader_peak_kb"]
    for bomb in ("b_bomb_collect_cap", "b_bomb_over", "b_bomb_under"):
        peak = timings[bomb]["grader_peak_kb"]
        assert honest and peak and peak < honest + 1024 * 1024, (bomb, peak, honest)
