"""Exercises of notebook 02 (`02_scaled_sum`): psum, pmean and pmax over 'devices'.

Every answer is a per-device function, run by the checks as
`jax.pmap(answer, axis_name=DEVICES)` on inputs with a leading axis of 2, 4 or
8 devices. Visible checks use small, readable inputs; `observe` exports programs
(2, 4 and 8 devices, several per-device shapes) whose inputs the grader draws.

Each visible check and its hidden observation accept the same answers:

- `scaled_sum_uses_psum` is about `lax.psum` only: the compiled program (visible:
  on public inputs, hidden: on the grader's) must psum over DEVICES, that psum must
  reach the result (`namedaxes.judging`: a psum multiplied by zero earns nothing), and the result must grow with
  the device count like a total (`_growth`), which a `pmean` does not (a pmean
  times the device count is a psum in disguise and passes; an `all_gather` summed
  scores the values but not this point);
- `scaled_mean` averages over shards of unequal size (NaN = no value); the hidden
  programs build that padding themselves from the grader's inputs (`_padded`);
- `global_max_share` divides by the largest *magnitude* on any device, on signed
  inputs (visible and hidden): the notebook's `pmax` cell divided by the largest
  value would be one edit away, and is wrong on negative entries.

Every student-facing sentence of the checks is a template in `TEXT`; the hints are
in `HINTS`, both in `text.py`.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        ".max_share": ("global_max_share",),
        ".mean": ("NAN", "scaled_mean"),
        ".mistakes": ("known_mistakes",),
        ".running": ("AXIS_ENV", "DEVICE_COUNTS"),
        ".totals": ("scaled_sum", "scaled_sum_uses_psum"),
    },
)
