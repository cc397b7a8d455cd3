"""Helpers of the tests of namedaxes.checking (tests/namedaxes/checking/)."""

from __future__ import annotations

import linecache

import jax.numpy as jnp
from jax import lax

from namedaxes import DEVICES, checking
from namedaxes.checking import (
    Exercise,
    expect_close,
)


def run_cell(source: str, number: int = 1) -> dict:
    """Run `source` as IPython runs a notebook cell (a cell file name, its lines in linecache): its names."""
    filename = f"<ipython-input-{number}-0123abcd>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"jnp": jnp, "lax": lax, "DEVICES": DEVICES}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def fresh_module(name: str, monkeypatch) -> dict:
    monkeypatch.setitem(checking.registry._REGISTRY, name, {})
    return {
        "a": Exercise("a", lambda f: expect_close("a", f(1.0), 2.0), module=name),
        "a_structure": Exercise("a", lambda f: None, module=name),
        "b": Exercise("b", lambda f: expect_close("b", f(1.0), 3.0), module=name),
        "c": Exercise("c", lambda f: None, module=name),
    }
