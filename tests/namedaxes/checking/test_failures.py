"""Unit tests of namedaxes/checking/failures.py.

`fail` raises `CheckFailed` with its message verbatim.
"""

from __future__ import annotations

import pytest

from namedaxes.checking import (
    CheckFailed,
    fail,
)


def test_fail_raises_check_failed_with_the_message_verbatim():
    with pytest.raises(CheckFailed) as err:
        fail("line one\n  line two ")
    assert str(err.value) == "line one\n  line two "
