"""Communication read from the traced program (the jaxpr): which collectives an answer performs, over
which axis names. Cheap (no compilation), so a visible check can name a missing collective before it
looks at values; the grader's own reading is that of the compiled program (`compiled`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .failures import fail_paragraph
from .text import TEXT

__all__ = [
    "collectives",
    "collective_axes",
    "expect_collective",
    "expect_no_collective",
    "ppermutes_out_of_mesh_order",
    "expect_ppermute_in_mesh_order",
    "shard_map_axes",
]


_COLLECTIVE_PARAM_KEYS = ("axes", "axis_name")
# Primitives that only change how a value is typed across an axis (shard_map's
# varying-manual-axes bookkeeping): they name an axis but move no data.
_TYPE_ONLY = {"pvary", "pcast"}
# Inside shard_map a psum of an axis-invariant value shows up under another name.
_ALIASES = {"psum_invariant": "psum", "psum2": "psum"}


def _walk_eqns(jaxpr) -> Iterable:
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)  # ClosedJaxpr -> Jaxpr
                if hasattr(inner, "eqns"):
                    yield from _walk_eqns(inner)


def collectives(fn: Callable, *args, axis_env: list[tuple[str, int]] | None = None) -> set[tuple[str, tuple[str, ...]]]:
    """The collectives `fn(*args)` performs: {(primitive, (axis names...)), ...}.

    Traces with `jax.make_jaxpr(fn, axis_env=...)`, so per-device functions
    (the `f` in `pmap(f, axis_name=...)`) can be inspected without running
    them; also looks inside `shard_map`, `jit`, `cond`, `scan`, ... bodies.
    """
    import jax

    closed = jax.make_jaxpr(fn, axis_env=axis_env or [])(*args)
    found = set()
    for eqn in _walk_eqns(closed.jaxpr):
        for key in _COLLECTIVE_PARAM_KEYS:
            if key in eqn.params:
                axes = eqn.params[key]
                axes = axes if isinstance(axes, (tuple, list)) else (axes,)
                named = tuple(str(a) for a in axes if isinstance(a, str))
                name = _ALIASES.get(eqn.primitive.name, eqn.primitive.name)
                if named and name not in _TYPE_ONLY:
                    found.add((name, named))
    return found


def collective_axes(fn: Callable, *args, axis_env=None) -> list[str]:
    """Sorted axis names that some collective in `fn(*args)` communicates over."""
    return sorted({a for _, axes in collectives(fn, *args, axis_env=axis_env) for a in axes})


def expect_collective(
    name: str, fn: Callable, *args, axis_name: str, axis_env, primitives: Iterable[str] | None = None, hint: str = ""
) -> None:
    """`fn` performs a collective over `axis_name` (optionally one of `primitives`)."""
    found = collectives(fn, *args, axis_env=axis_env)
    ok = [p for p, axes in found if axis_name in axes and (primitives is None or p in set(primitives))]
    if not ok:
        seen = TEXT["list_sep"].join(TEXT["over"].format(primitive=p, axes=axes) for p, axes in sorted(found))
        want = TEXT["or"].join(f"`{p}`" for p in primitives) if primitives else TEXT["a_collective"]
        template = TEXT["collective_missing"] if seen else TEXT["collective_missing_none"]  # whole sentences
        fail_paragraph(template.format(name=name, axis=axis_name, want=want, seen=seen, hint=hint))


def expect_no_collective(name: str, fn: Callable, *args, axis_name: str, axis_env, hint: str = "") -> None:
    """`fn` performs no collective over `axis_name`."""
    found = [(p, axes) for p, axes in collectives(fn, *args, axis_env=axis_env) if axis_name in axes]
    if found:
        fail_paragraph(
            TEXT["collective_unwanted"].format(
                name=name, axis=axis_name, found=TEXT["list_sep"].join(p for p, _ in found), hint=hint
            )
        )


def _ppermute_orders(jaxpr, mesh_axes: tuple) -> Iterable[tuple[tuple, tuple]]:
    """(axes named, the mesh's order of them) of each ppermute over several axes inside `jaxpr`; `mesh_axes` is
    the axis order of the innermost enclosing shard_map's mesh."""
    for eqn in jaxpr.eqns:
        inner_axes = mesh_axes
        if "mesh" in eqn.params and hasattr(eqn.params["mesh"], "axis_names"):
            inner_axes = tuple(eqn.params["mesh"].axis_names)
        if eqn.primitive.name == "ppermute":
            named = eqn.params.get("axis_name")
            named = tuple(named) if isinstance(named, (tuple, list)) else (named,)
            if len(named) > 1 and all(a in inner_axes for a in named):
                yield named, tuple(a for a in inner_axes if a in named)
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _ppermute_orders(inner, inner_axes)


def ppermutes_out_of_mesh_order(fn: Callable, *args) -> list[tuple[tuple, tuple]]:
    """Each ppermute of `fn(*args)` over several mesh axes named out of the mesh's order: (axes as named, the
    mesh's order). Read from the jaxpr, which every supported JAX line traces alike: jax 0.10.2 then runs such a
    ppermute in the mesh's order (a permutation other than the one written, silently), from 0.11.1 JAX refuses
    it when it lowers the program."""
    import jax

    closed = jax.make_jaxpr(fn)(*args)
    return [(named, order) for named, order in _ppermute_orders(closed.jaxpr, ()) if named != order]


def ppermute_order_refused() -> bool:
    """Does this JAX refuse a ppermute over axes named out of the mesh's order (0.11.1 on), or run it silently in
    the mesh's order (0.10.2)?"""
    import jax

    return bool(getattr(jax.config, "jax_raise_on_ppermute_sort_diff", False))


def expect_ppermute_in_mesh_order(name: str, fn: Callable, *args) -> None:
    """Every ppermute of `fn(*args)` over several axes names them in the mesh's order; else one message on
    every line, which says what this line does with it."""
    found = ppermutes_out_of_mesh_order(fn, *args)
    if found:
        import jax

        named, order = found[0]
        key = "ppermute_order_refused" if ppermute_order_refused() else "ppermute_order_silent"
        fail_paragraph(TEXT[key].format(name=name, named=named, order=order, version=jax.__version__))


def shard_map_axes(fn: Callable, *args) -> list[str]:
    """The mesh axes that a `shard_map` of `fn(*args)` maps by hand, sorted: the program's own per-device code,
    read from the jaxpr. Not from the lowered module: from jax 0.12.1, JAX lowers arithmetic on reduced and
    unreduced arrays (Explicit axes, no shard_map written) through manual computations of its own, whose
    `manual_axes` the lowered text shows for a program with no per-device code at all."""
    import jax

    axes = set()
    for eqn in _walk_eqns(jax.make_jaxpr(fn)(*args).jaxpr):
        if eqn.primitive.name == "shard_map":
            manual = eqn.params.get("newly_manual_axes") or eqn.params["mesh"].axis_names
            axes.update(str(a) for a in manual)
    return sorted(axes)
