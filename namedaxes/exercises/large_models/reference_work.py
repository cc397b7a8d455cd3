"""The reference's work on each mesh of notebook 09's exercises: one device's FLOPs, largest array and bytes
sent (`namedaxes.judging.Work`), measured from the solution notebook's programs compiled as the grader compiles
them, on each JAX line (jax 0.12.1's XLA counts about 1 % fewer FLOPs for the expert layer and a few fewer for
the ring; the pipeline's are the same on both). Each exercise judges an answer's work against its figures
within its own factors (`_PIPE_WORK`, `_MOE_WORK`, `_RING_WORK`); tests measure every figure again."""

from __future__ import annotations

from namedaxes.jax_line import NEWEST, OLDEST, measured_on_this_line
from namedaxes.judging import Work

# (exercise, devices) -> the reference's work on the oldest JAX line, on the newest
_MEASURED = {
    ("pipeline_loss", 8): (Work(1928.0, 0, 48, sent_bytes=484), Work(1928.0, 0, 48, sent_bytes=484)),
    ("pipeline_loss", 4): (Work(950.0, 0, 40, sent_bytes=244), Work(950.0, 0, 40, sent_bytes=244)),
    ("pipeline_loss", 2): (Work(264.0, 0, 16, sent_bytes=68), Work(264.0, 0, 16, sent_bytes=68)),
    ("moe_layer", 8): (Work(4582.0, 0, 384, sent_bytes=512), Work(4528.0, 0, 384, sent_bytes=512)),
    ("moe_layer", 4): (Work(2636.0, 0, 192, sent_bytes=320), Work(2606.0, 0, 192, sent_bytes=320)),
    ("moe_layer", 2): (Work(1126.0, 0, 96, sent_bytes=128), Work(1108.0, 0, 96, sent_bytes=128)),
    ("causal_ring_attention", 8): (Work(2492.0, 0, 48, sent_bytes=672), Work(2486.0, 0, 48, sent_bytes=672)),
    ("causal_ring_attention", 4): (Work(2495.0, 0, 96, sent_bytes=576), Work(2487.0, 0, 96, sent_bytes=576)),
    ("causal_ring_attention", 2): (Work(1362.0, 0, 100, sent_bytes=160), Work(1352.0, 0, 100, sent_bytes=160)),
}


def _on_this_line() -> dict:
    table: dict = {}
    for (exercise, k), (oldest, newest) in _MEASURED.items():
        table.setdefault(exercise, {})[k] = measured_on_this_line({OLDEST: oldest, NEWEST: newest})
    return table


REFERENCE_WORK = _on_this_line()  # exercise -> devices -> the reference's `Work` on the JAX line that runs
