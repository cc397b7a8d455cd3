"""Every grader text a student reads, in one table, in the submission's language.

`TEXT` maps a stable key to the English text (a `str.format` template): the feedback page's
words, the per-test reasons and the row reasons that reach students (grades.csv, results.json,
the feedback page, nbgrader's gradebook comments). The English text is the gettext msgid; the
translations live in the helper package's catalog (`locale/zh/namedaxes.po`, compiled to
`namedaxes/locale/zh/LC_MESSAGES/namedaxes.mo`) and are read through `namedaxes.i18n.gettext`,
so the grader has no catalog of its own. Texts the instructor reads (summary, class report,
internal errors, reference problems) stay English and are not here.

The judge and the run write none of these words: they return data (`reasons.Verdict`,
`reasons.Phrase`: a `reasons.Kind`, which is a key of `TEXT`, and its fields; the run's events,
time-outs, crashes and limits, and the pool's "not run" / "not graded" rows too), and
`autograder/publish/words.py` makes them sentences from `TEXT` when a file is published, in the
row's language (numbers are formatted there too).

Which language: the worker grading a submission wraps the whole task in `speaking(lang)`, where
`lang = submission_language(notebook)`. `text(key, **fields)` formats the current language's
template. Nothing here decides a score: a language only picks words.

Threat model: the language comes from the submission's metadata, so it is hostile input. Only a
`str` that is exactly one of `LANGUAGES` is accepted; anything else (missing, another type, an
unknown code, a list, a very long string) means "en". Field values (student ids, error texts from
the kernel) are inserted by `str.format` once and never formatted again, so a student's "{0}"
stays literal. A translation whose placeholders do not match the English template (a translator's
slip) falls back to the English text rather than failing the row.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading

__all__ = ["TEXT", "LANGUAGES", "text", "translate", "speaking", "current", "submission_language", "validate_language"]

from courseinfo.course import LANGUAGES  # the course decides which languages exist
from namedaxes import i18n  # the catalogs (namedaxes/locale/): the grader has none of its own

TEXT: dict[str, str] = {
    # ---- the feedback page (autograder/publish/feedback.py)
    "page_title": "Autograder feedback: {title}",
    "page_student": "Student:",
    "page_score": "Score: {score} / {max_score}",
    "page_status": "Status: {status}.",
    "page_table_test": "exercise",
    "page_table_part": "`{exercise}` (check {k} of {n})",
    "page_table_points": "points",
    "page_table_result": "result",
    "page_passed": "passed",
    "page_more": "the rest of the message",
    "page_late": "Late hand-in: handed in {handed_in}, {late} after the due date {due}. {rule}",
    "page_late_extended": "Late hand-in: handed in {handed_in}, {late} after your due date {due} (the "
    "assignment's {course_due}, extended by {extension}). {rule}",
    "report_late_extended": "Late hand-in: handed in {handed_in}, {late} after the student's due date {due} (the "
    "assignment's {course_due}, extended by {extension}). {rule}",
    "page_on_time_extended": "On time with an extension to {due} (the assignment's due date {course_due}, "
    "extended by {extension}): handed in {handed_in}, {late} after the assignment's due date; no points off.",
    "late_rule": "{head}: {days} started day(s) × {percent} of {max_score} point(s) = {penalty} point(s) off.",
    "late_rule_capped": "{head}: {days} started day(s) late, capped at {cap} of {max_score} point(s) = {penalty} "
    "point(s) off.",
    "late_rule_head": "The course's rule: {percent} of the maximum per started day late, at most {cap}",
    "late_rule_head_grace": "The course's rule: after a grace of {minutes} min, {percent} of the maximum per "
    "started day late, at most {cap}",
    "late_rule_grace": "That is within the course's grace of {minutes} min: no points off.",
    "late_rule_no_penalty": "The course takes no points off for late hand-ins.",
    "late_rule_lowered": "{rule} Only the {earned} point(s) earned were taken off: a score never goes below 0.",
    "duration_days": "{n} d",
    "duration_hours": "{n} h",
    "duration_minutes": "{n} min",
    "duration_seconds": "{n} s",
    "page_below": "Everything below the line comes from the submission; text that the submission wrote "
    "is shown as typed.",
    "verdict_head": "Autograder, exercise `{exercise}`: {points}.",
    "verdict_head_part": "Autograder, exercise `{exercise}`, check {k} of {n}: {points}.",
    "verdict_passed": "Passed.",
    "points_one": "{points} / {max_points} point",
    "points_many": "{points} / {max_points} points",
    # ---- per-test reasons (reasons.Kind; said by autograder/publish/words.py)
    "not_answered": "NotImplementedError: not answered yet (the answer cell still raises NotImplementedError)",
    "results_unreadable": "the recorded results could not be read",
    "cell_not_run": "this test cell was not run",
    "nothing_recorded": "the hidden test recorded no results (was `record` or the results folder tampered with?)",
    "hidden_inputs": "results differ from the reference on hidden inputs",
    "hidden_part_failed": "the hidden part of this test stopped with an error (what it said is not shown: it ran "
    "on hidden inputs; run the visible check and the cells above it to find the error)",
    "and_more": "; and {n} more",
    "notebook_unreadable": "the notebook could not be read",
    # ---- row reasons (reasons.Kind from judge/score.py, run/worker.py, run/executor.py,
    # sandbox/cgroups.py, sandbox/workcopy.py)
    "kernel_not_started": "the kernel did not start: {error}",
    "answers_missing": "no answer cell found for {ids} (graded as unanswered)",
    "failed_tests": "failed: {ids}",
    "cells_dropped": "{n} of the cells you added were not run (at most {limit} added cells are run)",
    "budget_notebook": "the notebook's time budget of {seconds} s",
    "budget_left": "what was left of this submission's time budget of {total} s ({left} s)",
    "budget_ran_out": "{what} ran out",
    "ran_out_of": "the notebook ran out of {what}; {n} cell(s) were not run",
    "output_notebook_cap": "the notebook's output passed {limit} characters at {label}; further output was dropped",
    "output_cell_cap": "{label} printed more than {limit} characters (or {outputs} outputs); the rest of its "
    "output was dropped",
    "stopped_budget": "was stopped when {what} ran out",
    "ran_longer": "ran longer than {seconds} s",
    "this_cell_interrupted": "this cell {how} and was interrupted",
    "cell_interrupted": "{label} {how} and was interrupted",
    "this_cell_hung": "this cell {how} and could not be interrupted; the kernel was restarted",
    "cell_hung": "{label} {how} and could not be interrupted (e.g. a loop inside compiled code); its kernel was "
    "restarted",
    "this_cell_oversized": "this cell sent an output larger than {mib} MiB in one message; it was dropped and the "
    "kernel restarted",
    "cell_oversized": "{label} sent an output larger than {mib} MiB in one message; it was dropped and its "
    "kernel restarted",
    "limit_restarted": "{label}: {reason}; its kernel was restarted",
    "cell_grade_id": "cell '{grade_id}'",
    "cell_added": "the cell you added after cell {index} (#{n} of your added cells)",
    "cell_id": "cell '{cell_id}'",
    "cell_number": "cell {number}",
    "died_cpu": ": CPU time limit reached",
    "died_segv": ": segmentation fault",
    "died_killed": " (killed: out of memory?)",
    "died_fsize": ": file size limit reached",
    "died_signal": " ({signal})",
    "died_exit": " (exit code {code})",
    "this_cell_died": "the kernel died in this cell{why}",
    "cell_died": "the kernel died in {label}{why}; it was restarted",
    "too_many_restarts": "too many kernel restarts",
    "not_restarted": "the kernel could not be restarted",
    "not_restarted_because": "the kernel could not be restarted: {error}",
    "replay_failed_rest": "the kernel failed while re-running earlier cells",
    "replay_failed": "after {label}, re-running the earlier cells in a fresh kernel failed too; the remaining "
    "cells were not run",
    "not_run_because": "not run: {why}",
    "limit_memory": "the notebook used more than its memory limit of {limit} (arrays, shared memory and files "
    "in /tmp, /dev/shm and the working folder all count) and its kernel was stopped",
    "limit_processes": "the notebook tried to start more than {limit} processes or threads at once; "
    "starting more was refused",
    "limit_disk": "the notebook filled its working folder ({limit}); writing more was refused",
    # ---- what the judge found (reasons.Kind from judge/programs.py, exported.py, compiling.py, compare.py,
    # scorer_process.py)
    "no_program": "{case}: no program was recorded",
    "too_many_programs": "too many recorded programs ({n})",
    "program_unreadable": "the recorded program could not be read ({error})",
    "program_needs_devices": "the recorded program needs {n} devices",
    "side_effects": "the program has side effects (e.g. a host callback)",
    "host_calls": "the program calls {calls}, which the grader does not run (host callbacks are not allowed)",
    "wrong_mesh": "{case}: runs on a mesh with axes {got}, expected {want}",
    "program_failed": "{case}: the recorded program failed to run ({error})",
    "program_failed_hidden": "{case}: the recorded program failed while it ran on the hidden inputs ({error}; what "
    "it said is not shown)",
    "comm_over": "communication over '{axis}'",
    "no_comm": "no communication at all",
    "comm_missing": "communication: expected {missing} (read from the compiled program), but it performs {seen}",
    "comm_extra_axes": "communication: it also communicates over {axes}, which the reference does not",
    "comm_surplus": "communication: it also performs {ops}, which this exercise does not allow (read from the "
    "compiled program)",
    "work_flops": "{case}: work: one device computes {ratio}× the reference's FLOPs ({got} against {want}, read "
    "from the compiled per-device program); this exercise allows {factor}×",
    "work_arithmetic": "{case}: work: one device does {ratio}× the reference's arithmetic on numbers ({got} against "
    "{want} additions, subtractions, multiplications and the like, read from the compiled per-device program); this "
    "exercise allows {factor}×: it computes more than its own share",
    "work_reduced": "{case}: communication: its types reduce {ratio}× the reference's bytes over the mesh ({got} "
    "against {want} bytes, each reduction counted as often as it runs, read from the exported program's types: the "
    "same on every backend); this exercise allows {factor}×",
    "work_peak": "{case}: memory: one device needs {ratio}× the reference's peak memory ({got} against {want} "
    "bytes, read from the compiled per-device program); this exercise allows {factor}×",
    "work_sent": "{case}: communication: one device receives {ratio}× the reference's bytes through its "
    "collectives in one call ({got} against {want} bytes, each collective counted as often as it runs, read from "
    "the compiled per-device program); this exercise allows {factor}×",
    "work_loops": "{case}: how its loops were counted: {bounded} as often as a limit of their own lets them run "
    "(their data may stop them sooner), {uncounted} whose runs only their data decide {unknown} times each",
    "work_loops_run": "{case}: how its loops were counted: by running the program on the hidden inputs, as often "
    "as each ran on the device that runs it most; the figures are not shown because they depend on the hidden "
    "inputs (the visible check shows them on its own inputs)",
    "work_flops_run": "{case}: work: one device computes more than {factor}× the reference's FLOPs (read from the "
    "compiled per-device program), which this exercise does not allow",
    "work_sent_run": "{case}: communication: one device receives more than {factor}× the reference's bytes through "
    "its collectives in one call (each collective counted as often as it runs, read from the compiled per-device "
    "program), which this exercise does not allow",
    "work_reduced_run": "{case}: communication: its types reduce more than {factor}× the reference's bytes over the "
    "mesh (each reduction counted as often as it runs, read from the exported program's types), which this exercise "
    "does not allow",
    "work_reduced_unknown": "{case}: communication: {loops} of its loops reduce over the mesh, and only its data "
    "decide how often they run; running the program to count them failed, so the judge cannot establish that its "
    "reductions stay within {factor}× the reference's, which this exercise requires",
    "work_overlap": "{case}: schedule: the compiled program runs {got} of its matmuls before its last ppermute, "
    "the reference {want} (read from the optimized program's order): the blocks travel first and the products "
    "come after, where the exercise interleaves them",
    "work_largest": "{case}: memory: one device materializes an array of {ratio}× the size of the reference's "
    "largest ({got} against {want} bytes, read from the compiled per-device program); this exercise allows "
    "{factor}×",
    "layout_input": "{case}: layout: the program takes {input} {got}; the exercise's takes it {want}",
    "layout_region_input": "{case}: layout: the per-device program over {axes} takes its input {n} {got}; the "
    "exercise's takes it {want}",
    "layout_regions": "{case}: layout: its per-device programs take their inputs {got}; the exercise's take "
    "them {want}",
    "layout_output": "{case}: layout: result {n} is {got}; the exercise's is {want}",
    "layout_region_dead": "{case}: layout: its per-device program over {axes} that takes each device's shard "
    "does not reach the results (changing what it returns changes no result), so no device works on its own "
    "shard where it counts",
    "layout_input_name": "input {n}",
    "layout_unstated": "with no stated layout",
    "layout_replicated": "whole on every device (replicated)",
    "layout_split": "split {dims}",
    "layout_dim": "along dimension {dim} over {axes}",
    "layout_no_region": "in no per-device program",
    "sig_devices": "the program runs on {got} devices, expected {want}",
    "sig_global_view": "no axis (a global-view program)",
    "sig_no_axis": "no axis",
    "sig_per_device": "the program is written per device over {got}, expected {want} (pmap/shard_map)",
    "sig_takes": "the program takes {got}, expected {want}",
    "sig_structure": "the program returns a different structure: {got}, expected {want}",
    "sig_returns": "the program returns {got}, expected {want}",
    "sig_takes_dtypes": "the program takes {changed} of its {total} inputs as {got}, expected {want} (their shapes "
    "are right)",
    "sig_returns_dtypes": "the program returns {changed} of its {total} results as {got}, expected {want} (their "
    "shapes are right)",
    "shape_dtype": "shape {shape} and dtype {dtype}",
    "expected_got": "{key}: expected {want}, got {got}",
    "values_differ": "{key}: values differ",
    # the known mistake's sentence is the exercise module's own (its TEXT, as the visible check says it)
    "known_mistake": "{key}: values differ. {diagnosis}",
    "axes_not_names": "{key}: expected a list of axis names, got {got}",
    "axes_seen": "it communicates over {axes}",
    "axes_none": "it performs no collective",
    "axes_missing": "{key}: expected a collective over {axes}, but {seen}",
    "key_missing": "{key}: missing from the results",
    "expected_array": "{key}: expected an array, got {got}",
    "expected_not_array": "{key}: expected a value that is not an array, got an array",
    "value_text": "a string of {n} characters",
    "value_name": "a name of {n} characters",
    "value_number": "a number",
    "value_bool": "True or False",
    "value_none": "None",
    "value_list": "a list of {n} items",
    "value_mapping": "a dict of {n} keys",
    "value_other": "a value of another type",
    "scorer_timeout": "running the recorded programs took longer than {seconds} s (does one of them loop forever?)",
    "scorer_died": "the recorded programs could not be run: the grader's scoring process stopped ({error})",
    "scorer_failed": "the grader could not judge this cell ({error})",
    "edition_mismatch": "not graded: the '{lang}' edition of {assignment} does not have the reference "
    "solution's code cells ({problem}); the instructor must regenerate the editions and regrade",
    # ---- rows the pool answers itself (reasons.Kind from run/pool.py)
    "budget_spent_elsewhere": "not run: this submission's time budget of {seconds} s went to its other notebooks",
    "budget_used_up": "not run: the submission's time budget was used up",
    "no_reference": "not graded: the reference solution of {assignment} does not run cleanly (see the grader's output)",
    "no_reference_cell": "not graded: no reference",
    "internal_error": "internal grader error (see the grader's output); regrade this student",
    "internal_error_cell": "internal grader error",
    "worker_died": "the grader's worker process died while grading this notebook",
    "worker_hung": "the grader's worker process stopped responding (no result within {seconds} s) and was killed",
    "lost_twice": "{why}, twice; not graded: regrade this student",
    "not_graded_because": "not graded: {why}",
}

_current: contextvars.ContextVar[str] = contextvars.ContextVar("autograder_language", default="en")
_lock = threading.Lock()


def validate_language(value) -> str:
    """`value` if it is exactly a supported language code, else "en"."""
    return value if isinstance(value, str) and value in LANGUAGES else "en"


def submission_language(nb) -> str:
    """The language a notebook claims (`metadata.namedaxes.language`), validated; "en" otherwise."""
    meta = nb.get("metadata") if isinstance(nb, dict) else None
    meta = meta.get("namedaxes") if isinstance(meta, dict) else None
    return validate_language(meta.get("language") if isinstance(meta, dict) else None)


def current() -> str:
    return _current.get()


@contextlib.contextmanager
def speaking(lang: str):
    """Within this block `text` answers in `lang` (validated)."""
    token = _current.set(validate_language(lang))
    try:
        yield
    finally:
        _current.reset(token)


def translate(message: str, lang: str) -> str:
    """`message` (an English msgid) in `lang`, through namedaxes.i18n; the English text when untranslated."""
    lang = validate_language(lang)
    if lang == "en":
        return message
    with _lock:  # namedaxes' language is process-wide: set, look up, restore
        previous = i18n.language()
        try:
            i18n.set_language(lang)
            return i18n.gettext(message)
        finally:
            i18n.set_language(previous)


def text(key: str, lang: str | None = None, /, **fields) -> str:
    """TEXT[key] in `lang` (default: the current language), formatted with `fields` (which may
    themselves be called `key` or `lang`: the first two parameters are positional only)."""
    english = TEXT[key]
    template = translate(english, lang or _current.get())
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError):
        return english.format(**fields)
