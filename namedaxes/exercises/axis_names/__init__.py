"""Exercises of notebook 01 (axis names): checks, hints and observations.

Every answer is a *per-device* function: it sees one device's slice of the
data and talks to the other devices only through collectives that name the
axis `DEVICES`. The checks run it under `jax.pmap(fn, axis_name=DEVICES)`
(and under `jax.vmap(fn, axis_name=DEVICES)` too) and go
type -> shape/dtype -> value -> structure.

Every student-facing sentence of the checks is a template in `TEXT`; the hints are
in `HINTS`, both in `text.py`. A check and its hidden
observation accept the same answers: `center` takes any collective over DEVICES
(`pmean`, `psum`, `all_gather`) in both, since its hidden cell is a values cell.

`center` subtracts one mean, that of all the elements of all devices (a local mean,
then a collective): the notebook's `batch_mean` cell edited once (`x - pmean(x)`)
subtracts a mean per position instead, and is told so.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        ".centering": ("center",),
        ".last_device": ("MACHINE_COUNT", "last_device_value"),
        ".mistakes": ("known_mistakes",),
        ".weighted": ("rank_weighted_sum",),
    },
)
