"""Every sentence a student can read from the exercise core, in one table (translate here, nowhere else).

The table is a `Messages` table (`namedaxes.i18n`): a lookup comes back in the kernel's language, and
`tools/translate/` extracts its English templates into `locale/zh/namedaxes.po`. The modules of
`namedaxes.checking` only pick templates and fill in their fields.
"""

from __future__ import annotations

from ..i18n import Messages

__all__ = ["TEXT", "NOT_WRITTEN_YET"]

# Every sentence a student can read from the core, in one place (translate here, nowhere else).
TEXT = Messages(
    {
        "not_written_yet": (
            "`{name}`{calls} is not written yet: replace `raise NotImplementedError()` in its cell "
            "with your code, then run that cell again."
        ),
        "calls": " (or a function it calls, such as `{callee}`)",
        "cell_not_written_yet": (
            "This cell is not written yet: replace `raise NotImplementedError()` with your code, then run it again."
        ),
        "not_defined_yet": (
            "`{name}` is not defined yet: run the cell with `def {name}(...)` first (it is not started "
            "while it still raises `NotImplementedError`), then this one again."
        ),
        "q_not_defined": (
            "`q` (the exercise checks) is not defined in this kernel: the notebook's import cell near the top "
            "(the one with the line `from namedaxes.exercises import ... as q`) has not run since the kernel "
            "started or restarted. Run the cells above first (Run ▸ Run All Above Selected Cell), then this cell "
            "again."
        ),
        "run_cells_above": (
            "`{name}` is not defined in this kernel: the cell that defines it has not run since the kernel "
            "started or restarted (a kernel runs cells in the order you run them, not the page's). Run the cells "
            "above first (Run ▸ Run All Above Selected Cell), then this cell again; if you did, check the "
            "spelling of `{name}`."
        ),
        "validate_busy": (
            "The machine is busy; the cell took {seconds} s, longer than Validate allows it on this machine now, "
            "so press Validate again when the machine is quieter (your answer was not judged wrong)."
        ),
        "uses_unwritten": "This cell runs `{name}`, which is not written yet: replace `raise NotImplementedError()` "
        "in its cell with your code, run that cell, then this one again.",
        "unbound_axis": (
            '`{name}` failed with JAX\'s error "NameError: {jax_error}" It means: `{name}` calls a '
            "collective over '{axis}', and no enclosing pmap/vmap/shard_map binds that name.{binds_only} "
            "{fix}"
        ),
        "binds_only": " {run} binds only {bound}.",
        "the_check": "The check",
        "fix_one_axis": "Write the axis name as the constant `{const}`: `axis_name={const}`.",
        "fix_axes": "Use the constants {consts} for the names.",
        "traced_to_numpy": (
            "`{name}` turns a traced value into a NumPy array or a Python number (`np.…`, "
            "`float(...)`, `.item()`) inside `jax.grad`, `jax.jit`, `jax.pmap` or `lax.scan`, where "
            "values are abstract. Compute with `jnp` and keep JAX arrays. JAX said: {jax_error}"
        ),
        "unreduced_op": (
            '`{name}` failed with JAX\'s error "{jax_error}": `{op}` was applied to an `unreduced` array (one '
            "partial sum per device, not yet added up), and JAX cannot apply it to partial sums. Reduce first, "
            "then apply it: `jax.reshard(total, P())` adds the partial sums up (one all-reduce), and dividing by "
            "the number of microbatches, say, comes after it."
        ),
        "raised_in_your_code": "`{name}` raised {error} at line {line} of its cell: `{code}`.",
        "raised": "`{name}` raised {error}.",
        "passed": "✓ `{name}` passes the visible checks.",
        "judged_outside": (
            "• `{name}` runs and exports. While your work is graded, the grader's judge decides this cell outside "
            "your notebook, on hidden inputs, with the same rules as the visible checks."
        ),
        "failed_mark": "✗ ",
        "hint_line": "Stuck? Run `q.{attr}.hint()` for a hint.",
        "need_devices": (
            "These checks need {need} devices, but JAX has {have}. Run the set-up cell at the top of "
            "the notebook (`setup_devices()`) first; if it says JAX is already running, restart the "
            "kernel and run the notebook from the top."
        ),
        "no_hint": "No hint for this one: re-read the section above the exercise.",
        "hint": "Hint {i}/{n} for `{name}`{more}: {text}",
        "hint_more": " (run hint() again for another)",
        "progress_title": "{passed} of {total} exercises pass",
        "progress_title_judged": (
            "{judged} of {total} exercises run and export; the grader judges them on hidden inputs"
        ),
        "progress_pass": "✓ {name}",
        "progress_fail": "✗ {name}: {why}",
        "progress_not_attempted": "• {name}: not started yet; write its answer cell, run it, then its test cell",
        "progress_changed": "• {name}: changed since its test cell ran; run that cell again",
        "progress_unchecked": "• {name}: not checked yet; run its test cell",
        "progress_judged": "• {name}: judged by the grader, on hidden inputs",
        "progress_done": "All exercises pass their visible checks. The hidden tests run when your work is graded.",
        # the generic checks (expect_*)
        "numpy_array": "`{name}` is a NumPy array; expected a `jax.Array` (compute it with jax/jnp/lax).",
        "not_an_array": "`{name}` should be a `jax.Array`, but it is a `{type}`: {value}",
        "wrong_shape": "`{name}` should have shape {want}, but it has shape {got}.",
        "wrong_dtype": "`{name}` should have dtype {want}, but it has dtype {got}.",
        "wrong_values": (
            "`{name}` has the wrong values: expected {want}, got {got} (first difference at index {where}). {hint}"
        ),
        "not_replicated": (
            "`{name}` returned different values on different devices: {values}. Every device should "
            "hold the same result: a collective such as `lax.psum` over '{axis}' is missing. {hint}"
        ),
        "ppermute_order_silent": (
            "`{name}` calls `lax.ppermute` over the axes {named}, named out of the mesh's order {order}. "
            "jax {version} runs it without an error but numbers the devices in the mesh's order, so the "
            "permutation it performs is not the one you wrote (on a 2 x 4 mesh, a shift by one of [0, ..., 7] "
            "gives [7, 6, 0, 1, 2, 3, 4, 5], not [7, 0, 1, 2, 3, 4, 5, 6]); from jax 0.11.1 JAX refuses this "
            "call. Name the axes in the mesh's order, {order}, and number the devices that way."
        ),
        "ppermute_order_refused": (
            "`{name}` calls `lax.ppermute` over the axes {named}, named out of the mesh's order {order}: "
            "jax {version} refuses to run it (jax 0.10.2 ran it silently in the mesh's order, a permutation "
            "other than the one written). Name the axes in the mesh's order, {order}, and number the devices "
            "that way."
        ),
        "ppermute_order_raised": (
            "`{name}` calls `lax.ppermute` over several axes named out of the mesh's order: jax {version} "
            "refuses to run it (jax 0.10.2 ran it silently in the mesh's order, a permutation other than the "
            "one written). Name the axes in the order the mesh declares them, and number the devices that way."
        ),
        "unreduced_unmarked": (
            "`{name}` returns a value under `out_specs=P(..., unreduced=...)` that is not typed unreduced, and "
            "jax {version} refuses it (`{jax_error}`; jax 0.10.2 accepted it). Mark each partial sum you return "
            "that way with `lax.pcast(value, axis, to='unreduced')` first."
        ),
        "collective_missing": "`{name}` should communicate over '{axis}' with {want}, but it performs {seen}. {hint}",
        "collective_missing_none": (
            "`{name}` should communicate over '{axis}' with {want}, but it performs no collective at all. {hint}"
        ),
        "collective_unwanted": (
            "`{name}` should not communicate over '{axis}', but it performs {found} over it. {hint}"
        ),
        "not_recordable": (
            "`{name}` gives the right results here, but the grader cannot record it as one compiled "
            "program (it exports your function with `jax.jit` on abstract inputs and judges that): "
            "{why}"
        ),
        "collective_unused": (
            "`{name}` performs {collective}, but nothing it carries between devices reaches what "
            "`{name}` returns (read from the compiled program: sending other data through it changes "
            "nothing, e.g. it sends zeros or a constant, or its result is multiplied by zero or "
            "discarded). Communication that carries nothing to the result counts for nothing. {hint}"
        ),
        "a_collective": "a collective",
        # layouts and communication, read from the compiled program as the grader reads them (issue 16)
        "layout_replicated": "whole on every device (replicated)",
        "layout_split": "split {dims}",
        "layout_dim": "along dimension {dim} over {axes}",
        "layout_region_input": (
            "`{name}` gives the right results here, but its per-device program over {axes} takes "
            "its input {n} {got}, where the exercise's takes it {want}: every device would hold "
            "more than its shard. {hint}"
        ),
        "layout_no_region": (
            "`{name}` gives the right results here, but it has no per-device program over {axes} "
            "that takes its inputs split as the exercise's does ({want}). {hint}"
        ),
        "layout_region_dead": (
            "`{name}` gives the right results here, but its per-device program over {axes} that takes its "
            "inputs split as the exercise's does ({want}) does not reach the results: changing what it "
            "returns leaves them as they are (what it returns is discarded, multiplied by zero, say). "
            "{hint}"
        ),
        "layout_output": (
            "`{name}` gives the right results here, but its result {n} is {got} once compiled, where "
            "the exercise's is {want}. {hint}"
        ),
        "list_sep": ", ",
        "or": " or ",
        "and": " and ",
        "over": "{primitive} over {axes}",
    }
)


NOT_WRITTEN_YET = TEXT.english("not_written_yet")  # the English template (TEXT[...] gives the translated one)
