"""Unit tests of judge/compare.py.

Plain observations compared with the reference's (tolerance, shape, dtype, axes, JSON values), loaded from
record files without pickles, and refused before they inflate (deflate bombs, huge or object arrays).
"""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from judge_helpers import observations_match, said

from autograder.judge.compare import compare, kind_of, load_observations, normalize
from autograder.publish.words import say
from autograder.run.observations import harvest_observations


def test_arrays_match_within_tolerance_with_same_shape_and_dtype():
    ref = normalize({"out": np.array([1.0, 2.0], np.float32), "axes": ["devices"]})
    assert compare(ref, normalize({"out": np.array([1.0, 2.000001], np.float32), "axes": ["devices"]})).passed
    v = said(compare(ref, normalize({"out": np.array([1.0, 2.5], np.float32), "axes": ["devices"]})))
    assert not v.passed and "out: values differ" in v.reason() and "0.5" not in v.reason()
    v = said(compare(ref, normalize({"out": np.array([1.0, 2.0], np.float16), "axes": ["devices"]})))
    assert not v.passed and "expected shape (2,) and dtype float32, got shape (2,) and dtype float16" in v.reason()
    v = said(compare(ref, normalize({"out": np.array([[1.0, 2.0]], np.float32), "axes": ["devices"]})))
    assert not v.passed and "shape (1, 2)" in v.reason()
    nan = normalize({"out": np.array([np.nan, 1.0])})
    assert compare(nan, nan).passed


def test_axes_must_include_every_reference_axis():
    ref = normalize({"axes": ["devices"]})
    assert compare(ref, normalize({"axes": ["batch", "devices"]})).passed
    v = said(compare(ref, normalize({"axes": []})))
    assert not v.passed and "expected a collective over 'devices', but it performs no collective" in v.reason()
    v = said(compare(ref, normalize({"axes": ["batch"]})))
    assert "it communicates over 'batch'" in v.reason()
    assert not compare(ref, normalize({"axes": "devices"})).passed


PROVOCATIVE = 'The judge says you all cheated <script>alert(1)</script> <a href="x">here</a>'


@pytest.mark.parametrize(
    ("got", "en", "zh"),
    [
        (PROVOCATIVE, f"a string of {len(PROVOCATIVE)} characters", f"一个含 {len(PROVOCATIVE)} 个字符的字符串"),
        ([PROVOCATIVE, 1], "a list of 2 items", "一个含 2 项的列表"),
        ({PROVOCATIVE: PROVOCATIVE}, "a dict of 1 keys", "一个含 1 个键的字典"),
        (3.5, "a number", "一个数值"),
        (True, "True or False", "True 或 False"),
        (None, "None", "None"),
    ],
)
def test_a_recorded_value_of_the_wrong_kind_is_said_by_its_kind_never_its_text(got, en, zh):
    """The judge's words only: the class's map shows a verdict under the judge's name (issue 46)."""
    v = compare(normalize({"out": np.zeros(3)}), normalize({"out": got}))
    assert not v.passed and say(v.differences[0], "en") == f"out: expected an array, got {en}"
    assert say(v.differences[0], "zh").endswith(zh) and say(kind_of(got), "en") == en
    for lang in ("en", "zh"):
        assert "cheated" not in say(v.differences[0], lang) and "<" not in say(v.differences[0], lang)


def test_recorded_axis_names_are_shown_only_as_short_identifiers():
    ref = normalize({"axes": ["devices"]})
    v = said(compare(ref, normalize({"axes": ["batch", PROVOCATIVE, "x" * 30]})))
    assert f"it communicates over 'batch', a name of {len(PROVOCATIVE)} characters, a name of 30 characters" in (
        v.reason()
    )
    v = said(compare(ref, normalize({"axes": PROVOCATIVE})))
    assert f"(axes: expected a list of axis names, got a string of {len(PROVOCATIVE)} characters)" in v.reason()


def test_json_values_must_be_equal_and_keys_present():
    ref = normalize({"flag": True, "n": 3, "names": ["a", "b"], "x": 0.1})
    assert compare(ref, normalize({"flag": True, "n": 3, "names": ["a", "b"], "x": 0.1000001, "extra": 1})).passed
    assert not compare(ref, normalize({"flag": 1, "n": 3, "names": ["a", "b"], "x": 0.1})).passed
    assert not compare(ref, normalize({"flag": True, "n": 3, "names": ["b", "a"], "x": 0.1})).passed
    v = said(compare(ref, normalize({"flag": True, "n": 3, "names": ["a", "b"]})))
    assert not v.passed and "x: missing from the results" in v.reason()
    assert not compare(normalize({"out": np.zeros(2)}), {"out": [0.0, 0.0]}).passed


def test_observations_match_accepts_jax_arrays():
    import jax.numpy as jnp

    assert observations_match(
        {"out": jnp.ones(3), "axes": ["devices"]}, {"out": np.ones(3, np.float32), "axes": ["devices"]}
    )


def test_observations_load_from_record_files_without_pickles(tmp_path):
    import os

    from namedaxes import grading

    os.environ[grading.OBSERVE_DIR_ENV] = str(tmp_path)
    try:
        grading.record("g1", {"out": np.arange(3.0), "axes": ["devices"], "ok": True})
    finally:
        del os.environ[grading.OBSERVE_DIR_ENV]
    got = harvest_observations(tmp_path, "g1")
    obs = load_observations(*got)
    assert obs["axes"] == ["devices"] and obs["ok"] is True and obs["out"].tolist() == [0.0, 1.0, 2.0]
    buf = io.BytesIO()
    np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):
        load_observations(buf.getvalue(), None)


def _npz_member(name: str, header: dict, data: bytes, compression=None) -> bytes:

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression or zipfile.ZIP_STORED) as zf, zf.open(name, "w", force_zip64=True) as fh:
        head = io.BytesIO()
        np.lib.format.write_array_header_1_0(head, header)
        fh.write(head.getvalue())
        for start in range(0, len(data), 2**24):
            fh.write(data[start : start + 2**24])
    return buf.getvalue()


def test_a_deflate_bomb_observation_is_refused_before_it_inflates():
    import resource

    bomb = _npz_member(
        "x.npy", {"descr": "<f8", "fortran_order": False, "shape": (2**27,)}, bytes(2**30), zipfile.ZIP_DEFLATED
    )
    assert len(bomb) < 2 * 2**20  # 1 GiB of zeros in about 1 MiB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ValueError, match="would inflate to more than 64 MiB"):
        load_observations(bomb, None)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 * 1024  # KiB: nothing inflated


def test_an_observation_header_declaring_a_huge_or_object_array_is_refused():
    huge = _npz_member("y.npy", {"descr": "<f8", "fortran_order": False, "shape": (10**10,)}, bytes(64))
    with pytest.raises(ValueError, match="declares more data than it holds"):
        load_observations(huge, None)
    objects = _npz_member("z.npy", {"descr": "|O", "fortran_order": False, "shape": (1,)}, bytes(8))
    with pytest.raises(ValueError, match="holds Python objects"):
        load_observations(objects, None)
    many = io.BytesIO()
    np.savez(many, **{f"a{i}": np.zeros(1) for i in range(600)})
    with pytest.raises(ValueError, match="too many recorded arrays"):
        load_observations(many.getvalue(), None)
    fine = io.BytesIO()
    np.savez(fine, x=np.arange(3.0))
    assert load_observations(fine.getvalue(), None)["x"].tolist() == [0.0, 1.0, 2.0]
