"""tools/install_venv.py's progress: each locked package is numbered once, and the count ends at the lock's.

pip's own lines, as it printed them installing requirements/py311.txt (141 packages): after the
last locked package it collects a dependency's extras and a candidate its resolver then drops,
and the progress used to number those too (`[143]` of 141, "144 of the 141 locked packages
fetched now (-3 already there)").
"""

from __future__ import annotations

from tools.install_venv import Collected, requirement_name

LOCK = ["jsonschema==4.23.0", "widgetsnbextension==4.0.16", "yarl==1.25.1", "argon2-cffi-bindings==26.2.0"]

PIP_SAYS = [  # the argument of pip's "Collecting"/"Processing" lines, in the order it printed them
    "argon2-cffi-bindings==26.2.0",
    "jsonschema==4.23.0",
    "/root/.cache/pip/wheels/ab/widgetsnbextension-4.0.16-py3-none-any.whl",
    "yarl==1.25.1",
    "jsonschema[format-nongpl]>=4.18.0",
    "jsonschema==4.25.1",
    "jsonschema[format-nongpl]>=4.18.0",
    "setuptools>=61",  # not locked: a build dependency
]


def test_requirement_names():
    assert requirement_name("jsonschema[format-nongpl]>=4.18.0") == "jsonschema"
    assert requirement_name("argon2-cffi-bindings==26.2.0") == "argon2_cffi_bindings"
    assert requirement_name("/x/widgetsnbextension-4.0.16-py3-none-any.whl") == "widgetsnbextension"
    assert requirement_name("python_json_logger==4.2.0") == requirement_name("python-json-logger")


def test_each_locked_package_is_numbered_once_and_the_count_never_passes_the_lock():
    collected = Collected(LOCK)
    numbers = [collected.number(what) for what in PIP_SAYS]
    assert numbers == [1, 2, 3, 4, None, None, None, None]
    assert len(collected.seen) == len(LOCK), "fetched now + already there adds up to the lock's count"
