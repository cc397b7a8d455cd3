"""The course refuses a JAX it cannot teach: `import namedaxes` (every notebook's set-up cell, `from namedaxes
import setup_devices`) on a JAX older than the oldest line stops with one sentence naming the version found,
the version needed and the command (on Colab, then the restart). Fixture: Colab's preinstalled jax 0.7.2,
faked as a `jax` package whose `__version__` is 0.7.2, and as an installed distribution of that version."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from namedaxes import jax_line

ROOT = Path(__file__).resolve().parents[2]
SETUP_CELL = "from namedaxes import setup_devices"
COLAB = (
    "This course needs jax 0.10.2 or newer, but this Colab runtime runs jax 0.7.2: run "
    "`!pip install -q -r course/requirements/colab.txt -e course`, then Runtime > Restart session, "
    "and run this notebook again from its first cell."
)


def _elsewhere() -> str:
    pin = "0.10.2" if sys.version_info < (3, 12) else "0.12.1"
    return (
        "This course needs jax 0.10.2 or newer, but this Python runs jax 0.7.2: run "
        f'`pip install "jax=={pin}" "jaxlib=={pin}"`, then restart the kernel and run this notebook again '
        "from its first cell."
    )


def _fake_jax(tmp_path: Path, *, distribution: bool) -> Path:
    """A folder that shadows the installed JAX: a `jax` package of version 0.7.2, or only its metadata."""
    if distribution:
        info = tmp_path / "jax-0.7.2.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jax\nVersion: 0.7.2\n")
    else:
        (tmp_path / "jax").mkdir()
        (tmp_path / "jax" / "__init__.py").write_text('__version__ = "0.7.2"\n')
    return tmp_path


def _run(code: str, shadow: Path, colab: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("COLAB_RELEASE_TAG", "NAMEDAXES_LANG")}
    env["PYTHONPATH"] = os.pathsep.join([str(shadow), str(ROOT)])
    env["NAMEDAXES_LANG"] = "en"
    if colab:
        env["COLAB_RELEASE_TAG"] = "release-colab-external_20261201-060055_RC00"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=shadow)


@pytest.mark.parametrize("colab", [True, False], ids=["colab", "elsewhere"])
@pytest.mark.parametrize(
    "code, distribution",
    [
        (f"import jax\n{SETUP_CELL}", False),  # JAX imported first: its own __version__ is what runs
        (SETUP_CELL, True),  # JAX not imported: the installed distribution's version, JAX left unimported
    ],
    ids=["jax-imported", "jax-installed"],
)
def test_the_set_up_cell_refuses_colabs_preinstalled_jax_in_one_sentence(tmp_path, code, distribution, colab):
    done = _run(code, _fake_jax(tmp_path, distribution=distribution), colab)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"namedaxes.jax_line.JaxTooOldError: {COLAB if colab else _elsewhere()}"
    assert len(re.findall(r"[.:] [A-Z]", last.split(": ", 1)[1])) == 0, "one sentence"


def test_the_set_up_cell_imports_on_the_jax_of_this_line(tmp_path):
    done = _run(f"{SETUP_CELL}\nimport jax\nprint(jax.__version__)", tmp_path, colab=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [jax_line.found_version()]


@pytest.mark.parametrize(
    "version, taught",
    [
        ("0.7.2", False),
        ("0.10.1", False),
        ("0.9.2.dev20260101", False),
        ("0.10.2", True),
        ("0.10.2.dev20260101", True),
        ("0.11.0rc1", True),
        ("0.12.0.1", True),
        ("0.12.1", True),
        ("1.0.0", True),
    ],
)
def test_which_versions_are_refused(version, taught):
    assert (jax_line.refusal(version) is None) is taught


def test_the_lines_are_requirements_pins():
    text = (ROOT / "requirements.txt").read_text()
    assert f'jax=={jax_line.OLDEST}; python_version < "3.12"' in text
    assert f'jax=={jax_line.NEWEST}; python_version >= "3.12"' in text


def test_the_set_up_holds_the_newest_lines_random_and_partitioning_flags(tmp_path):
    """jax 0.12.1's `jax_random_normal_mode` and `jax_legacy_random_uniform` change the draws the notebooks
    record when flipped (from the environment, say), `jax_partitioning` the programs: the set-up holds each at
    the value that gives 0.10.2's draws. On 0.10.2 the flags do not exist and the environment names nothing."""
    code = (
        "from namedaxes import setup_devices\nsetup_devices(quiet=True)\nimport jax\n"
        "k = jax.random.key(0)\nprint(*jax.random.uniform(k, (3,)).tolist(), *jax.random.normal(k, (2,)).tolist())\n"
        "print(*sorted(n for n in " + repr(sorted(jax_line.PINNED_FLAGS)) + " if hasattr(jax.config, n)))"
    )
    flipped = {"JAX_RANDOM_NORMAL_MODE": "high", "JAX_LEGACY_RANDOM_UNIFORM": "0", "JAX_PARTITIONING": "1"}
    env = {**os.environ, **flipped, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    draws, flags = done.stdout.splitlines()
    assert [float(v) for v in draws.split()] == pytest.approx([0.947667, 0.9785799, 0.33229148, 1.6226422, 2.0252647])
    newest = jax_line._release(jax_line.found_version()) >= jax_line._release(jax_line.NEWEST)
    assert flags.split() == (sorted(jax_line.PINNED_FLAGS) if newest else [])
