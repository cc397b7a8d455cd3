"""The JAX lines the course teaches, and the refusal of any other before a notebook meets it.

`import namedaxes` (every notebook's set-up cell) calls `require_supported_jax()`: on a JAX older than
`OLDEST` (Colab's preinstalled jax 0.7.2 has no `lax.pcast`, no `P(unreduced=...)`, no `jax.shard_map`)
it stops with one sentence naming the version found, the version needed and the exact command to run (on
Colab, followed by the restart), instead of an `AttributeError` deep inside an exercise. The version is
JAX's own `jax.__version__` when this process has imported JAX already (the one that runs, even when pip
installed another one since: then only a restart helps), else the installed distribution's, read without
importing JAX (importing the course stays cheap). The pins are requirements.txt's (a test keeps them equal).
"""

from __future__ import annotations

import os
import re
import sys

from .i18n import Messages

__all__ = [
    "OLDEST",
    "NEWEST",
    "PINNED_FLAGS",
    "JaxTooOldError",
    "found_version",
    "require_supported_jax",
    "pin_flags",
    "measured_on_this_line",
    "TEXT",
]

OLDEST = "0.10.2"  # the newest release for Python 3.11 (requirements.txt)
NEWEST = "0.12.1"  # Python >= 3.12 (requirements.txt)

# Flags of the newest line whose other values change the random draws or the compiled programs the course
# records and judges (jax 0.12.1 added them, defaulting to what 0.10.2 does): held at those values, whatever the
# environment (JAX_RANDOM_NORMAL_MODE=high gives other normal draws, not a few ulps but other numbers).
PINNED_FLAGS = {
    "jax_legacy_random_uniform": True,  # False: uniform draws by another conversion (last bits differ)
    "jax_random_normal_mode": "low",  # "high", "highest": other normal draws
    "jax_partitioning": False,  # True: explicit-mesh collectives lowered through shard_map, other programs
}

TEXT = Messages(
    {
        "too_old_colab": (
            "This course needs jax {needed} or newer, but this Colab runtime runs jax {found}: run "
            "`!pip install -q -r course/requirements/colab.txt -e course`, then Runtime > Restart session, "
            "and run this notebook again from its first cell."
        ),
        "too_old": (
            "This course needs jax {needed} or newer, but this Python runs jax {found}: run "
            "`{command}`, then restart the kernel and run this notebook again from its first cell."
        ),
    }
)


class JaxTooOldError(ImportError):
    """The JAX this process runs (or would import) is older than the oldest line the course teaches."""


def _release(version: str) -> tuple[int, ...]:
    """0.12.0.1 -> (0, 12, 0, 1); a local or pre-release tail (0.10.2.dev20260101, 0.11.0rc1) is cut off."""
    parts = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.group() != part:
            break
    return tuple(parts)


def found_version() -> str | None:
    """The JAX version this process runs (`jax.__version__` when imported), else the installed one; None if
    JAX is not installed (the import of JAX then says so itself)."""
    loaded = sys.modules.get("jax")
    if loaded is not None and isinstance(getattr(loaded, "__version__", None), str):
        return loaded.__version__
    from importlib import metadata

    try:
        return metadata.version("jax")
    except metadata.PackageNotFoundError:
        return None


def on_colab() -> bool:
    return "google.colab" in sys.modules or bool(os.environ.get("COLAB_RELEASE_TAG"))


def install_command() -> str:
    """The pinned JAX for this Python (requirements.txt's markers: jax 0.10.2 on 3.11, the newest from 3.12)."""
    pin = OLDEST if sys.version_info < (3, 12) else NEWEST
    return f'pip install "jax=={pin}" "jaxlib=={pin}"'


def refusal(found: str) -> str | None:
    """The one sentence that stops the course on jax `found`; None when `found` is a line it teaches."""
    if _release(found) >= _release(OLDEST):
        return None
    if on_colab():
        return TEXT.say("too_old_colab", needed=OLDEST, found=found)
    return TEXT.say("too_old", needed=OLDEST, found=found, command=install_command())


def pin_flags() -> dict:
    """Set each of `PINNED_FLAGS` this JAX has (0.10.2 has none of them) to its value; those set, by name."""
    import jax

    pinned = {}
    for name, value in PINNED_FLAGS.items():
        if hasattr(jax.config, name):
            jax.config.update(name, value)
            pinned[name] = value
    return pinned


def measured_on_this_line(by_line: dict):
    """The entry of `by_line` ({OLDEST: ..., NEWEST: ...}: a figure of a compiled program, measured on each line)
    for the JAX that runs: the newest line's from jax 0.12 on, else the oldest's. A visible check compares with
    the figure of the line it runs on, as the grader compares with the reference compiled there."""
    import jax

    return by_line[NEWEST if _release(jax.__version__) >= (0, 12) else OLDEST]


def require_supported_jax() -> None:
    found = found_version()
    message = refusal(found) if found is not None else None
    if message is not None:
        raise JaxTooOldError(message)
