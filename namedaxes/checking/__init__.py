"""The exercise core: student-facing checks, their feedback, and the notebook's progress.

Every check raises `CheckFailed` (an `AssertionError`, so nbgrader counts it as
a failed test; its `ename`/`evalue` are what the grader reads) with a message that
names the variable, says what was expected and what was seen; an answer that is not
started yet (still the stub) raises its subclass `NotAttempted`. Checks go
type -> shape/dtype -> value, so the first message a student meets is about the
most basic problem.

Design, shared by every notebook (each notebook's package `namedaxes/exercises/<topic>/` only states
its own rules: inputs, expected values and the diagnoses of its typical mistakes, its words in its
`text.py`). One job per module:

- `text`: every student-facing sentence of the core, in one `Messages` table (`TEXT`),
  so it can be translated without touching the logic.
- `failures`: the failure kinds, `CheckFailed` (wrong) and `NotAttempted` (not started),
  and `fail`. **Feedback, not crashes**: a failed check shows its message only, no
  traceback (`CheckFailed._render_traceback_`: IPython, the notebook's error output and
  hence nbgrader's Validate dialog show these lines instead of the frames).
- `rendering`: how a failure looks: red, with a plain-text `evalue` for graders and
  exports; a passed check prints one green line. Colour is ANSI, which Jupyter,
  nbconvert and terminals render and nbgrader's command line strips; `NO_COLOR` turns
  it off. A failure in a language written without spaces wraps by display width (two
  columns per CJK character), never inside a `code span`.
- `explaining`: **error translation lives here once** (`explained`): an answer that still
  raises `NotImplementedError` ("not written yet", naming the unwritten function it
  calls: `NotAttempted`), a collective over an axis name nothing binds, a traced value
  turned into NumPy, and any other error raised in the student's own code (quoted with
  its cell line). Exercise modules add only rules of their own.
- `values`: type, shape, dtype, layout and value checks (`expect_array`, `expect_float32`, `expect_layout`,
  `expect_result` for a result laid out over a mesh, `expect_close`, ...), what every notebook's messages show
  of a value (`show_values`, `show_number`, `first_line`, `spec_text`; `f32` for its inputs), and the
  exercises' idiom for wrong values: the known mistake they are (`which_mistake`, `mistake_sentence`) and the
  failure that shows them (`fail_values`).
- `traced`: communication read from the jaxpr (`collectives`, `expect_collective`).
- `compiled`: communication, layouts and one device's work read from the compiled program, as the
  grader judges them (`examined`, `expect_communication`, `expect_regions`, `answer_work`, `expect_work_within`, ...).
- `regions`: the grader's region and communication steps for answers that are per-device
  functions, shared by notebooks 05, 06 and 07 (`expect_own_shard`, `judge_regions`).
- `proving`: pitfall cells (`show_error`) and checks proven both ways (`assert_check_*`).
- `course_devices`: the checks need the course's 8 devices, said plainly.
- `exercise`: `Exercise` (check, hints, observe, judge). **Explicit binding**: an exercise
  module states what it is at its top, nothing inspects the caller's frame:

      exercise = exercises_for(__package__, text)   # its Exercise maker: exercise("name", check, observe=...)

  its words (`TEXT`, `HINTS`, `MISTAKE_HINTS`) being data in its package's `text.py`, and `q.progress()` the
  package face's (`namedaxes.exercises.notebook_face`).

- `registry`: the registry of exercises and their `LastCheck` (passed, failed, not
  attempted); `progress_list`: `progress(module)` (exposed as `q.progress()` in each
  notebook) lists which exercises pass, are wrong, are not started, changed since their
  check, or were not checked yet.
- `stubs`, `notebook`: **unwritten stubs in plain cells**. In a notebook, a cell that
  calls a function whose body is still `raise NotImplementedError()` shows the same one
  line "`loss_fn` is not written yet: ..." (an IPython exception hook registered on
  import), and a cell that uses an answer whose cell has not run says so; an unanswered
  notebook shows messages, not stub tracebacks.
- **Languages** (`namedaxes.i18n`): every `TEXT` table is a `Messages` table, whose
  lookups come back in the kernel's language (the Chinese edition: `zh`); an exercise's
  hints are translated when shown, so exercise modules keep English templates only.

Threat model: this code runs in the student's kernel and decides nothing about a grade
(scores come from the programs the hidden tests export, judged outside the kernel); its
module state lives in mutated containers, which the grader's guard restores between cells.
"""

from __future__ import annotations

from .compiled import (
    answer_work,
    describe_layout,
    examined,
    expect_case_work,
    expect_communication,
    expect_output_layouts,
    expect_reaching_collective,
    expect_regions,
    expect_work_within,
    reaching_communication,
)
from .exercise import Exercise, exercises_for
from .explaining import explain_error, explained, layout_error, not_started, not_written_yet, unbound_axis_name
from .failures import CheckFailed, NotAttempted, fail
from .progress_list import progress, progress_of, progress_rows
from .proving import assert_check_fails, assert_check_passes, show_error
from .stubs import install_stub_handler
from .text import NOT_WRITTEN_YET, TEXT
from .traced import (
    collective_axes,
    collectives,
    expect_collective,
    expect_no_collective,
    expect_ppermute_in_mesh_order,
    ppermutes_out_of_mesh_order,
)
from .values import (
    expect_array,
    expect_close,
    expect_float32,
    expect_layout,
    expect_replicated,
    expect_result,
    f32,
    fail_values,
    first_line,
    mistake_sentence,
    result_layout,
    same_values,
    show_number,
    show_values,
    spec_text,
    which_mistake,
)

__all__ = [
    "CheckFailed",
    "NotAttempted",
    "Exercise",
    "exercises_for",
    "expect_array",
    "expect_float32",
    "expect_close",
    "expect_replicated",
    "expect_layout",
    "expect_result",
    "result_layout",
    "spec_text",
    "collectives",
    "collective_axes",
    "expect_collective",
    "expect_no_collective",
    "expect_ppermute_in_mesh_order",
    "ppermutes_out_of_mesh_order",
    "reaching_communication",
    "expect_reaching_collective",
    "examined",
    "expect_communication",
    "expect_regions",
    "expect_output_layouts",
    "describe_layout",
    "answer_work",
    "expect_case_work",
    "expect_work_within",
    "show_error",
    "assert_check_fails",
    "assert_check_passes",
    "fail",
    "show_values",
    "show_number",
    "which_mistake",
    "mistake_sentence",
    "fail_values",
    "f32",
    "first_line",
    "same_values",
    "NOT_WRITTEN_YET",
    "not_written_yet",
    "not_started",
    "unbound_axis_name",
    "layout_error",
    "explained",
    "explain_error",
    "progress",
    "progress_of",
    "progress_rows",
    "TEXT",
]

install_stub_handler()
