"""What a student reads when shipping fails or a worker fails, in the notebook's language
(`locale/zh/namedaxes.po`)."""

from __future__ import annotations

from ..i18n import Messages

__all__ = ["TEXT"]

TEXT = Messages(
    {
        "ship_not_function": "only functions can be shipped to the workers, not {type}",
        "ship_not_def": (
            "`{name}` is a {type}, not a function defined with `def`: it cannot be sent to the workers as source text"
        ),
        "ship_lambda": "`{name}` is a lambda: define it with `def` so that its source can be sent to the workers",
        "ship_closure": "`{name}` uses {names} from an enclosing function: define it at the top level of a cell",
        "ship_no_source": "the source of `{name}` is not available ({error}); define it in a notebook cell with `def`",
        "ship_variable": (
            "`{name}` uses the notebook variable `{var}` (a {type}), which cannot be sent to the workers "
            "as source: pass it as an argument instead"
        ),
        "not_running": "the cluster is not running: start a new one (multiprocess.get_cluster() or Cluster().start())",
        "running": "running `{name}`",
        "starting": "starting",
        "raised": "process {i} of {n} raised {error}\n(while {what})",
        "raised_too": "process {i} of {n} raised {error} (so did {others})\n(while {what})",
        "raised_stuck": (
            "process {i} of {n} raised {error}\n(while {what}; the other processes were stuck waiting for "
            "it and were killed)"
        ),
        "timed_out": "{slow} of {n} did not finish {what} within {timeout} s. All {n} worker processes were killed.",
        "timed_out_some_done": (
            "{slow} of {n} did not finish {what} within {timeout} s; {done} did finish (a process "
            "waiting in a collective that the others skipped never returns). All {n} worker "
            "processes were killed."
        ),
        "died": "process {i} of {n} exited with code {code} while {what}; all worker processes were killed.",
        "process_one": "process {i}",
        "process_many": "processes {ids}",
        "id_sep": ", ",
        "stderr_last": "stderr of process {i}, last lines:",
        "stderr_where": "stderr of process {i}, where it was waiting (its Python stack, most recent call first):",
        "stderr_nothing": "(nothing)",
        "echo": "[process {i}] {line}",
        "cluster": "<Cluster: {n} processes x {k} devices, {state}>",
        "cluster_coordinator": "<Cluster: {n} processes x {k} devices, {state}, coordinator {address}>",
        "state_running": "running",
        "state_stopped": "stopped",
        "state_not_started": "not started",
    }
)
