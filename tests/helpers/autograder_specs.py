"""Fixture submissions for the autograder tests, as specs (never as copies of notebooks).

Each `Spec` says which released notebook (notebooks/<assignment>.ipynb) a
student starts from, what goes into which answer cell (by grade_id; answer
cells a spec does not mention get the reference solution's code), what is done
to the notebook afterwards (tamperings), and what the autograder must say: the
status and exactly which test cells pass. `build_class` turns the specs into a
submissions folder at test time, so the fixtures follow the release when it
changes.
"""

from __future__ import annotations

import copy
import io
import json
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.course.classroom import release_notebook, typed_solution

REPO = Path(__file__).resolve().parents[2]
A02 = "02_scaled_sum"
A01 = "01_axis_names"

SUM_TESTS = {"scaled_sum_total", "scaled_sum_uses_psum"}
ALL_02 = {"scaled_sum_total", "scaled_sum_uses_psum", "scaled_mean_value", "global_max_share_value"}
ALL = "all"


HIDDEN_ERROR_REASON = (
    r"^HiddenTestError: the hidden part of this test stopped with an error \(what it said is not shown"
)


# ---------------------------------------------------------------- notebook helpers
def nb_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def find(nb, grade_id: str) -> int:
    for i, cell in enumerate(nb.cells):
        if nb_meta(cell).get("grade_id") == grade_id:
            return i
    raise KeyError(grade_id)


def solution_code(source_nb, grade_id: str) -> str:
    """The reference answer as a student would type it (solution markers removed)."""
    return typed_solution(source_nb.cells[find(source_nb, grade_id)].source)


# ---------------------------------------------------------------- tamperings
def edit_test_cell(grade_id: str, new_source: str) -> Callable:
    def tamper(nb):
        nb.cells[find(nb, grade_id)].source = new_source
        return nb

    tamper.__name__ = f"edit_test_cell({grade_id})"
    return tamper


def delete_cells(*grade_ids: str) -> Callable:
    def tamper(nb):
        nb.cells = [c for c in nb.cells if nb_meta(c).get("grade_id") not in grade_ids]
        return nb

    return tamper


def duplicate_cell(grade_id: str, times: int = 2) -> Callable:
    def tamper(nb):
        i = find(nb, grade_id)
        copies = []
        for n in range(times):
            c = copy.deepcopy(nb.cells[i])
            c.id = f"{c.id}-copy{n}"
            copies.append(c)
        nb.cells[i + 1 : i + 1] = copies
        return nb

    return tamper


def retag_test_cell(grade_id: str) -> Callable:
    """Make a test cell look like an ungraded answer cell with new id and source."""

    def tamper(nb):
        cell = nb.cells[find(nb, grade_id)]
        cell.metadata["nbgrader"].update(
            {"grade": False, "solution": True, "locked": False, "grade_id": grade_id + "_mine"}
        )
        cell.metadata["nbgrader"].pop("points", None)
        cell.id = "my-own-" + grade_id.replace("_", "-")
        cell.source = "print('all good')"
        return nb

    return tamper


def change_points(grade_id: str, points: int) -> Callable:
    def tamper(nb):
        nb.cells[find(nb, grade_id)].metadata["nbgrader"]["points"] = points
        return nb

    return tamper


def add_cell_after(grade_id: str, source: str) -> Callable:
    def tamper(nb):
        i = find(nb, grade_id)
        nb.cells.insert(i + 1, nbformat.v4.new_code_cell(source))
        return nb

    return tamper


def add_cells_after(grade_id: str, sources: list[str], markdown: bool = False) -> Callable:
    def tamper(nb):
        i = find(nb, grade_id)
        new = nbformat.v4.new_markdown_cell if markdown else nbformat.v4.new_code_cell
        nb.cells[i + 1 : i + 1] = [new(src) for src in sources]
        return nb

    return tamper


def strip_answer_metadata(grade_id: str) -> Callable:
    """The answer cell lost its nbgrader metadata (copy-paste): found again by its cell id."""

    def tamper(nb):
        cell = nb.cells[find(nb, grade_id)]
        cell.metadata = {}
        return nb

    return tamper


# ---------------------------------------------------------------- specs
@dataclass
class Spec:
    student: str
    expect_status: str
    expect_pass: set[str] | str = field(default_factory=set)  # grade ids, or ALL
    assignment: str = A02
    answers: dict[str, str] = field(default_factory=dict)
    tamper: tuple = ()
    raw: bytes | None = None  # the whole file (corrupt / not a notebook)
    file_name: str | None = None  # default: the released name
    as_zip: bool = False  # the student's folder is given as <student>.zip
    empty: bool = False  # an empty folder
    reason: str = ""  # regex the row's reason must match
    extra_files: dict[str, bytes] = field(default_factory=dict)
    cell_reasons: dict[str, str] = field(default_factory=dict)  # grade_id -> regex of its failure reason

    def passes(self, all_tests: set[str]) -> set[str]:
        return set(all_tests) if self.expect_pass == ALL else set(self.expect_pass)


def _wrong_sum(body: str) -> dict:
    return {"scaled_sum_answer": f"def scaled_sum(x):\n    {body}\n"}


NO_SUM = ALL_02 - SUM_TESTS
MAX_OUTPUT_CHARS = 2_000_000  # the class is graded with --max-output-chars 2000000 (harness)


def _after_last_answer(code: str) -> dict:
    """The reference answer of global_max_share, followed by `code` (filled in by build_class)."""
    return {"global_max_share_answer": "{solution}\n" + code}


# Builds, inside the working copy: a folder tree deeper than shutil.rmtree's recursion limit, a folder
# without permissions (with a file in it), a FIFO, and links to a host folder (the canary) the grader
# must never follow while cleaning up.
HOSTILE_TREE = """import os
_top = os.getcwd()
os.mkdir("deep")
os.chdir("deep")
for _ in range(1200):
    os.mkdir("d")
    os.chdir("d")
os.symlink({canary!r}, "to_canary")
os.chdir(_top)
os.makedirs("locked/inner")
open("locked/inner/f", "w").write("x")
os.chmod("locked/inner", 0)
os.chmod("locked", 0)
os.mkfifo("fifo")
os.symlink({canary!r}, "canary_link")
os.symlink({canary!r} + "/keep.txt", "canary_file_link")
"""

# Replaces the observation folder by a link to a host folder holding the reference's own
# observation for the last test: followed, it would pass; read or cleared there, the canary changes.
OBSERVE_LINK = """import os, shutil
_d = os.environ["NAMEDAXES_OBSERVE_DIR"]
shutil.rmtree(_d)
os.symlink({canary!r}, _d)
"""

FLOOD = (
    "return x * 2.0\n\nfrom IPython.display import display\nfor _ in range(4):\n"
    "    display({'text/plain': 'x' * (64 * 2**20)}, raw=True)"
)

# Registered first thing: prints every execution's source, plainly and reversed, and keeps them all.
HIDDEN_SOURCE_PRINTER = """import builtins
builtins._seen_sources = []
def _print_source(info):
    builtins._seen_sources.append(info.raw_cell)
    print("SEEN:", info.raw_cell)
    print("NEES:", info.raw_cell[::-1])
get_ipython().events.register("pre_run_cell", _print_source)
get_ipython().events.register("post_run_cell", lambda result: print("AGAIN:", builtins._seen_sources[-1:]))
"""
# After the last test cell: everything kept so far, once more.
HIDDEN_SOURCE_REPLAY = (
    "import builtins\nprint('ALL:', builtins._seen_sources)\nraise ValueError(repr(builtins._seen_sources))"
)
# The right answer, except that it raises what it has seen once that holds a hidden line.
HIDDEN_SOURCE_RAISER = """import builtins
_right_scaled_mean = scaled_mean
def scaled_mean(x):
    if any(("BEGIN " + "HIDDEN") in s for s in builtins._seen_sources):     # (no marker in its own source)
        raise ValueError("".join(builtins._seen_sources))
    return _right_scaled_mean(x)
"""

SPECS: list[Spec] = [
    # -------- right, unanswered, common mistakes, equivalent alternatives
    Spec("correct", "ok", ALL),
    Spec(
        "unanswered",
        "ok",
        set(),
        answers={g: None for g in ("scaled_sum_answer", "scaled_mean_answer", "global_max_share_answer")},
        cell_reasons={"scaled_sum_total": "not written yet|NotImplementedError"},
    ),
    Spec(
        "mistake_no_collective",
        "ok",
        NO_SUM,
        answers=_wrong_sum("return jnp.sum(x * 2.0)"),
        cell_reasons={
            # the judge's words (a graded kernel leaves the judging to it): the first thing wrong, the shape
            "scaled_sum_total": r"the program returns float32\[2\], expected float32\[2, 3\]",
            "scaled_sum_uses_psum": r"the program returns float32\[4\], expected float32\[4, 3\]",
        },
    ),
    Spec(
        "mistake_wrong_axis",
        "ok",
        NO_SUM,
        answers=_wrong_sum("return lax.psum(x * 2.0, axis_name='device')"),
        cell_reasons={"scaled_sum_total": "did not bind|unbound"},
    ),
    Spec(
        "mistake_pmean_for_psum",
        "ok",
        NO_SUM,  # a mean is not a psum total: no structure point either
        answers=_wrong_sum("return lax.pmean(x * 2.0, axis_name=DEVICES)"),
        cell_reasons={"scaled_sum_total": "mean over devices"},
    ),
    Spec("mistake_hard_coded", "ok", NO_SUM, answers=_wrong_sum("return jnp.full_like(x, 56.0)")),
    Spec(
        "mistake_mean_over_8",
        "ok",
        ALL_02 - {"scaled_mean_value"},
        answers={"scaled_mean_answer": "def scaled_mean(x):\n    return lax.psum(x * 2.0, axis_name=DEVICES) / 8\n"},
    ),
    Spec(
        "alternatives",
        "ok",
        ALL,
        answers={
            "scaled_sum_answer": "def scaled_sum(x):\n    return lax.psum(x, axis_name=DEVICES) * 2.0\n",
            "scaled_mean_answer": "def scaled_mean(x):\n    n = lax.psum(jnp.sum(~jnp.isnan(x)), axis_name=DEVICES)\n"
            "    return (lax.psum(jnp.nansum(2.0 * x), axis_name=DEVICES) / n).astype(x.dtype)\n",
            "global_max_share_answer": "def global_max_share(x):\n    top = lax.pmax(jnp.abs(x), axis_name=DEVICES)\n"
            "    return x * (1 / top)\n",
        },
    ),
    Spec(
        "metadata_lost_and_extra_cells",
        "ok",
        ALL,
        tamper=(
            strip_answer_metadata("scaled_sum_answer"),
            add_cell_after("scaled_mean_answer", "helper = 41 + 1\nprint(helper)"),
            add_cell_after("imports", "print('my notes')"),
        ),
    ),
    # -------- tampering: never earns anything, never loses anything
    Spec(
        "tamper_edited_and_retagged_test_cells",
        "ok",
        NO_SUM,
        answers=_wrong_sum("return x * 2.0"),
        tamper=(edit_test_cell("scaled_sum_total", "print('passed!')"), retag_test_cell("scaled_sum_uses_psum")),
    ),
    Spec(
        "tamper_deleted_test_cells",
        "ok",
        ALL,
        tamper=(delete_cells("scaled_sum_total", "scaled_sum_uses_psum", "scaled_mean_value"),),
    ),
    Spec(
        "tamper_duplicated_test_cell",
        "ok",
        NO_SUM,
        answers=_wrong_sum("return x * 2.0"),
        tamper=(duplicate_cell("scaled_mean_value", 3),),
    ),
    Spec(
        "tamper_changed_points",
        "ok",
        ALL_02 - {"scaled_mean_value"},
        answers={"scaled_mean_answer": "def scaled_mean(x):\n    return x\n"},
        tamper=(change_points("scaled_sum_total", 100), change_points("scaled_mean_value", 0)),
    ),
    Spec(
        "tamper_patch_allclose_hide_tracebacks",
        "ok",
        NO_SUM,
        answers=_wrong_sum(
            "return x * 2.0\n\nimport numpy as np\nnp.allclose = lambda *a, **k: True\nnp.isclose = lambda a, b, **k: "
            "np.ones(np.shape(a), bool)\njnp.allclose = lambda *a, **k: True\n"
            "import namedaxes.checking as _c\n_c.expect_close = lambda *a, **k: None\n"
            "_c.expect_replicated = lambda *a, **k: None\n"
            "get_ipython().showtraceback = lambda *a, **k: None\nget_ipython()._showtraceback = lambda *a, **k: None"
        ),
    ),
    Spec(
        "tamper_patch_psum_and_builtins",
        "ok",
        NO_SUM,
        answers=_wrong_sum(
            "return x * 2.0 * 8\n\nlax.psum = lambda x, axis_name=None, **k: x\njax.lax.psum = lax.psum\n"
            "import builtins\nbuiltins.all = lambda it: True\nbuiltins.any = lambda it: True"
        ),
    ),
    Spec(
        "tamper_patch_check_and_collectives",
        "ok",
        NO_SUM,
        answers=_wrong_sum(
            "return jnp.sum(x * 2.0)\n\nq.scaled_sum.check = lambda *a: print('Correct!')\n"
            "q.scaled_sum_uses_psum.check = lambda *a: print('Correct!')\n"
            "import namedaxes.checking as _c\n_c.collective_axes = lambda *a, **k: ['devices']\n"
            "_c.collectives = lambda *a, **k: {('psum', ('devices',))}\n"
            "q.collective_axes = _c.collective_axes\nq.collectives = _c.collectives"
        ),
    ),
    Spec(
        "tamper_patch_during_call",
        "ok",
        NO_SUM,
        answers={
            "scaled_sum_answer": (
                "def scaled_sum(x):\n    import namedaxes.checking as c\n"
                "    import namedaxes.exercises.scaled_sum as m\n"
                "    fake = lambda *a, **k: {('psum', ('devices',))}\n"
                "    c.collectives = m.collectives = fake\n"
                "    c.collective_axes = m.collective_axes = lambda *a, **k: ['devices']\n"
                "    return x * 2.0\n"
            )
        },
    ),
    Spec(
        "tamper_fake_record",
        "ok",
        NO_SUM,
        answers=_wrong_sum(
            "return x * 2.0\n\nimport os, json, numpy as np\n_d = os.environ.get('NAMEDAXES_OBSERVE_DIR', '.')\n"
            "for _g in ('scaled_sum_total', 'scaled_sum_uses_psum'):\n"
            "    open(os.path.join(_d, _g + '.json'), 'w').write(json.dumps({'axes': ['devices'], "
            "'psum_over_devices': True, 'psum_over_devices_vector': True}))\n"
            "def record(*args, **kwargs):\n    pass"
        ),
    ),
    # -------- crashes: each gets a row with a reason; the rest of the notebook is graded
    Spec(
        "crash_python_loop",
        "timeout",
        NO_SUM,
        answers=_wrong_sum("return x\n\nwhile True:\n    pass"),
        reason=r"cell 'scaled_sum_answer' ran longer than \d+ s and was interrupted",
    ),
    Spec(
        "crash_xla_while_loop",
        "timeout",
        NO_SUM,
        answers=_wrong_sum(
            "return lax.psum(x * 2.0, axis_name=DEVICES)\n\n"
            "jax.jit(lambda: lax.while_loop(lambda c: c < 10, lambda c: (c + 1) % 5, 0))().block_until_ready()"
        ),
        reason=r"cell 'scaled_sum_answer' .*could not be interrupted",
    ),
    Spec(
        "crash_os_exit",
        "kernel_died",
        NO_SUM,
        answers=_wrong_sum("return lax.psum(x * 2.0, axis_name=DEVICES)\n\nimport os\nos._exit(3)"),
        reason=r"kernel died in cell 'scaled_sum_answer' \(exit code 3\)",
    ),
    Spec(
        "crash_segfault",
        "kernel_died",
        ALL_02 - {"scaled_mean_value"},
        answers={
            "scaled_mean_answer": "def scaled_mean(x):\n    return lax.pmean(x * 2.0, axis_name=DEVICES)\n\n"
            "import ctypes\nctypes.string_at(0)"
        },
        reason=r"kernel died in cell 'scaled_mean_answer': segmentation fault",
    ),
    Spec(
        "crash_in_test",
        "kernel_died",
        ALL_02 - {"global_max_share_value"},
        answers={"global_max_share_answer": "def global_max_share(x):\n    import os\n    os._exit(1)\n"},
        reason=r"kernel died in cell 'global_max_share_value'",
    ),
    Spec(
        "crash_memory_hog",
        "ok",
        NO_SUM,
        answers={
            "scaled_sum_answer": (
                "import numpy as np\n\ndef scaled_sum(x):\n    hog = np.ones(2**34, np.uint8)\n"
                "    return lax.psum(x * 2.0, axis_name=DEVICES)\n"
            )
        },
        cell_reasons={"scaled_sum_total": "MemoryError"},
    ),
    Spec(
        "corrupt_json",
        "unreadable",
        set(),
        raw=b'{"cells": [{"cell_type": "code", "source": "x = 1"',
        reason="invalid JSON",
    ),
    Spec(
        "not_a_notebook", "unreadable", set(), raw=b"%PDF-1.4 binary \xff\xfe junk", reason="not UTF-8|not a notebook"
    ),
    Spec("renamed_notebook", "missing", set(), file_name="02_scaled_sum (1).ipynb", reason="renamed"),
    Spec("empty_folder", "missing", set(), empty=True, reason="empty submission"),
    Spec("stray_files", "ok", ALL, extra_files={"notes.txt": b"my notes", "draft.py": b"print(1)"}),
    # -------- odd ids and zips
    Spec("José María Ñúñez Ø", "ok", ALL),
    Spec("zoe zipped", "ok", ALL, as_zip=True),
    Spec("=SUM(1;2)", "ok", ALL),  # a formula as a student id: neutralized in CSV
    Spec("@cmd", "ok", ALL),
    # -------- attacks on the grader process (issue 8): graded exactly, nothing else touched
    Spec(
        "attack_hidden_marker_markdown",
        "ok",
        ALL,
        tamper=(
            add_cells_after("imports", ["### BEGIN HIDDEN TESTS\nno end marker here"], markdown=True),
            add_cells_after("imports", ["# ### BEGIN HIDDEN TESTS\nx_marker = 1"]),
        ),
    ),
    Spec(
        "attack_deep_json",
        "unreadable",
        set(),
        reason="nested too deeply",
        raw=b'{"cells": [' + b"[" * 200_000 + b"]" * 200_000 + b'], "nbformat": 4, "nbformat_minor": 5}',
    ),
    Spec(
        "attack_huge_int",
        "unreadable",
        set(),
        reason=r"invalid JSON \(Exceeds the limit",
        raw=b'{"cells": [], "nbformat": 4, "nbformat_minor": ' + b"9" * 100_000 + b"}",
    ),
    Spec(
        "attack_wrong_types",
        "unreadable",
        set(),
        reason="not a readable notebook",
        raw=json.dumps(
            {
                "cells": [
                    {"cell_type": ["code"], "source": {"a": 1}, "metadata": [1, 2], "id": 7, "outputs": "x"},
                    5,
                    None,
                    {
                        "cell_type": "markdown",
                        "source": ["a", 3, None],
                        "metadata": {"nbgrader": {"grade_id": ["x"], "solution": "true"}},
                        "attachments": 5,
                    },
                ],
                "metadata": [],
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        ).encode(),
    ),
    Spec(
        "attack_lone_surrogate",
        "unreadable",
        set(),
        reason="invalid Unicode",
        raw=b'{"cells": [{"cell_type": "markdown", "source": "\\ud800", "metadata": {}}], "metadata": {}, '
        b'"nbformat": 4, "nbformat_minor": 5}',
    ),
    Spec(
        "attack_message_flood",
        "too_much_output",
        NO_SUM,
        answers=_wrong_sum(FLOOD),
        reason=r"cell 'scaled_sum_answer' sent an output larger than 8 MiB in one message",
    ),
    Spec(
        "attack_many_cells",
        "too_many_cells",
        ALL,
        tamper=(add_cells_after("imports", ["pass"] * 150),),
        reason=r"^50 of the cells you added were not run \(at most 100 added cells are run\)$",
    ),
    Spec(
        "attack_output_flood",
        "too_much_output",
        ALL,
        tamper=(add_cells_after("imports", ["print('y' * 900_000)"] * 3),),
        reason=r"^the notebook's output passed 2,000,000 characters at the cell you added after cell \d+ "
        r"\(#3 of your added cells\); further output was dropped$",
    ),
    Spec("attack_hostile_tree", "ok", ALL, answers=_after_last_answer(HOSTILE_TREE)),
    # (the link is planted by the last answer cell; every hidden part runs after it, and finds no folder)
    Spec("attack_observe_link", "ok", set(), answers=_after_last_answer(OBSERVE_LINK)),
    # -------- issue 16: the hidden half of a test cell never reaches a feedback page, though the kernel
    # prints (plainly and reversed) the source of every execution it gets, keeps them, prints them again
    # from a cell of its own after the last test, and makes an answer raise them once it has seen one
    Spec(
        "attack_print_hidden_source",
        "ok",
        ALL_02 - {"scaled_mean_value"},
        answers={"scaled_mean_answer": "{solution}\n" + HIDDEN_SOURCE_RAISER},
        tamper=(
            add_cells_after("imports", [HIDDEN_SOURCE_PRINTER]),
            add_cells_after("global_max_share_value", [HIDDEN_SOURCE_REPLAY]),
        ),
        cell_reasons={"scaled_mean_value": HIDDEN_ERROR_REASON},
    ),
    # -------- isolation: the answer cell proves it cannot see or reach anything (else it raises)
    Spec("sandbox_probe", "ok", ALL, answers={"scaled_sum_answer": None}),  # filled in by build_class
    # -------- a second assignment
    Spec("correct", "ok", ALL, assignment=A01),
]

SANDBOX_PROBE = """import os, socket
for _p in {forbidden!r}:
    assert not os.path.exists(_p), "can see " + _p
for _target in {writable!r}:
    try:
        open(_target, "w").write("x")
    except OSError:
        pass
    else:
        raise AssertionError("could write " + _target)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
except OSError:
    pass
else:
    raise AssertionError("network reachable")
open("my_own_file.txt", "w").write("fine")
import ctypes as _ctypes, errno as _errno
_libc = _ctypes.CDLL(None, use_errno=True)
for _name, _nr in {refused_syscalls!r}.items():      # the seccomp allow-list, in a kernel `make grade` started
    _ctypes.set_errno(0)
    if _libc.syscall(_ctypes.c_long(_nr), 0, 0, 0, 0, 0) != -1 or _ctypes.get_errno() != _errno.EPERM:
        raise AssertionError(_name + " was not refused with EPERM")
for _d in (os.listdir({xla_root!r}) if os.path.isdir({xla_root!r}) else []):
    try:
        os.listdir(os.path.join({xla_root!r}, _d))
    except OSError:
        pass
    else:
        raise AssertionError("can list the compilation cache " + _d)

{solution}
"""


def notebook_for(spec: Spec, source_nb, context: dict) -> bytes:
    """The submitted file of `spec` (bytes)."""
    if spec.raw is not None:
        return spec.raw
    nb = release_notebook(spec.assignment)
    answers = {
        g: (
            a.replace("{solution}", solution_code(source_nb, g)).replace(
                "{canary!r}", repr(context.get("canary", "/nonexistent"))
            )
            if isinstance(a, str)
            else a
        )
        for g, a in spec.answers.items()
    }
    if spec.student == "sandbox_probe":
        answers["scaled_sum_answer"] = SANDBOX_PROBE.format(
            solution=solution_code(source_nb, "scaled_sum_answer"), **context
        )
    for cell in nb.cells:
        gid = nb_meta(cell).get("grade_id")
        if nb_meta(cell).get("solution"):
            if gid in answers:
                if answers[gid] is not None:
                    cell.source = answers[gid]
            else:
                cell.source = solution_code(source_nb, gid)
    for tamper in spec.tamper:
        nb = tamper(nb)
    return nbformat.writes(nb).encode()


# Intake attacks: folder (or zip) names -> (status, regex of the reason). Each holds a correct notebook;
# none may be graded, and none may get an output folder.
NFC_NAME = "Zoë Conflict"
NFD_NAME = "Zoe\u0308 Conflict"
INTAKE = {
    NFC_NAME: (
        "conflict",
        r"name the same student .*Unicode normalization, letter case or spaces around the name.*neither is graded",
    ),
    NFD_NAME: ("conflict", r"name the same student"),
    "Twin": ("conflict", r"^class/Twin: the folders 'Twin' and 'twin' name the same student"),
    "twin": ("conflict", r"name the same student"),
    "bobby": ("conflict", r"name the same student"),
    "bobby.zip": ("conflict", r"name the same student"),
    "...zip": ("unplaceable", r"not a usable student id: '\.\.' is not a usable student id; not graded"),
    "bell\x07ring": (
        "unplaceable",
        r"class/bell\\x07ring: not a usable student id: the name contains a control "
        r"or format character \(U\+0007\)",
    ),
    "back\\slash": ("unplaceable", r"not a usable student id: the name contains a path separator"),
}


def zip_bytes(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


def build_intake(root: Path, source_nb) -> None:
    correct = notebook_for(Spec("x", "ok", assignment=A02), source_nb, {})
    for name in INTAKE:
        if name.endswith(".zip"):
            (root / name).write_bytes(zip_bytes({f"{A02}.ipynb": correct}))
        else:
            (root / name).mkdir()
            (root / name / f"{A02}.ipynb").write_bytes(correct)


def build_canary(canary: Path, reference_dir: Path | None) -> dict[str, bytes]:
    """A host folder student code may point links at; returns its contents (to check it is unchanged)."""
    canary.mkdir(parents=True, exist_ok=True)
    (canary / "keep.txt").write_text("the grader must not delete or change this")
    gid = "global_max_share_value"
    copied = False
    for suffix in (".json", ".npz"):
        ref = reference_dir / f"{gid}{suffix}" if reference_dir else None
        if ref is not None and ref.is_file():
            (canary / f"{gid}{suffix}").write_bytes(ref.read_bytes())
            copied = True
    if not copied:
        (canary / f"{gid}.json").write_text(json.dumps({"value_ok": True}))
    return {p.name: p.read_bytes() for p in sorted(canary.iterdir())}


def build_class(specs: list[Spec], root: Path, sources: dict, context: dict) -> Path:
    """Write the submissions folder: <root>/<student>/<notebook> (or <student>.zip)."""
    root.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        folder = root / spec.student
        folder.mkdir(exist_ok=True)
        if spec.empty:
            continue
        name = spec.file_name or f"{spec.assignment}.ipynb"
        (folder / name).write_bytes(notebook_for(spec, sources[spec.assignment], context))
        for extra, data in spec.extra_files.items():
            (folder / extra).write_bytes(data)
    (root / "loose_file.ipynb").write_text(json.dumps({"cells": []}))
    build_intake(root, sources[A02])
    for spec in specs:
        if spec.as_zip:
            folder = root / spec.student
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w") as zf:
                for f in sorted(folder.iterdir()):
                    zf.write(f, f"{spec.student}/{f.name}")
            for f in folder.iterdir():
                f.unlink()
            folder.rmdir()
            (root / f"{spec.student}.zip").write_bytes(buf.getvalue())
    return root


def expected_reason_ok(spec: Spec, reason: str) -> bool:
    return not spec.reason or re.search(spec.reason, reason) is not None
