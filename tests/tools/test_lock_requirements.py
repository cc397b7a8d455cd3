"""The pins agree everywhere: requirements.txt (the direct pins, the one place versions are
chosen), the full per-Python locks requirements/pyXY.txt and requirements/colab.txt that
`make lock` derives from it, environment.yml (conda, the Python 3.11 line), and what is
installed in the venv running these tests (so the lock of this Python is the tested one).
"""

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tools import install_venv, lock_requirements

ROOT = Path(__file__).resolve().parents[2]

SUPPORTED = lock_requirements.SUPPORTED
# conda-forge names that differ from PyPI's
CONDA_TO_PIP = {"python-flatbuffers": "flatbuffers"}
TOOLING = {"jupyterlab", "nbgrader", "nbval", "pytest", "pytest-xdist", "playwright", "ruff"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _direct_pins(py: str) -> dict[str, str]:
    """requirements.txt's pins that apply on Python `py` (markers evaluated by `packaging`)."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        req = Requirement(line)
        spec = str(req.specifier)
        assert spec.startswith("==") and "," not in spec, f"requirements.txt: {line!r} is not pinned with =="
        if req.marker is None or req.marker.evaluate({"python_version": py, "python_full_version": py + ".0"}):
            assert _norm(req.name) not in pins, f"requirements.txt pins {req.name} twice for Python {py}"
            pins[_norm(req.name)] = spec[2:]
    return pins


def _lock(py: str) -> dict[str, str]:
    pins = {}
    for line in lock_requirements.lock_path(py).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;=]+)", line.strip())
        assert m, f"{lock_requirements.lock_path(py).name}: {line!r} is not `name==version`"
        assert _norm(m.group(1)) not in pins, f"{line!r} appears twice"
        pins[_norm(m.group(1))] = m.group(2)
    return pins


def _conda() -> tuple[str, dict[str, str]]:
    python, pins = None, {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        # a conda package (name=version), or a pip one in its pip: section (name==version)
        m = re.match(r"^\s+-\s+([A-Za-z0-9_.-]+)==?([0-9][^\s=#]*)\s*(#.*)?$", line)
        if m and m.group(1) == "python":
            python = m.group(2)
        elif m:
            name = m.group(1).lower()
            pins[_norm(CONDA_TO_PIP.get(name, name))] = m.group(2)
    return python, pins


def test_environment_yml_pins_the_direct_pins_of_its_python():
    python, conda = _conda()
    assert python in SUPPORTED, f"environment.yml asks for Python {python}, not one of {SUPPORTED}"
    assert conda == _direct_pins(python), f"drift between requirements.txt and environment.yml (Python {python})"


@pytest.mark.parametrize("py", SUPPORTED)
def test_each_lock_contains_the_direct_pins_of_its_python(py):
    lock, direct = _lock(py), _direct_pins(py)
    differ = {name: (version, lock.get(name)) for name, version in direct.items() if lock.get(name) != version}
    assert not differ, (
        f"{lock_requirements.lock_path(py).name} disagrees with requirements.txt "
        f"(pinned, locked): {differ}; run `make lock`"
    )
    assert lock["flatbuffers"] == direct["flatbuffers"], "jax.export.serialize needs flatbuffers"
    # the lock is complete: the direct pins' dependencies are there too
    assert {"numpy", "ml-dtypes", "scipy", "ipykernel", "nbconvert"} <= set(lock)


def test_the_two_jax_lines():
    assert _lock("3.11")["jax"] == _lock("3.11")["jaxlib"] == "0.10.2", "jax 0.10.2 is the newest for Python 3.11"
    for py in ("3.12", "3.13"):
        assert re.fullmatch(r"0\.12\.\d+(\.\d+)?", _lock(py)["jax"]), f"Python {py}: the newest JAX line"
        assert _lock(py)["jaxlib"] == _lock(py)["jax"]
    for py in SUPPORTED:
        direct = _direct_pins(py)
        assert direct["nbgrader"] == "0.9.6" and direct["nbval"] == "0.11.0"
        assert direct["jupyterlab"].startswith("4.6.") and direct["matplotlib"].startswith("3.11.")


def test_locks_exist_for_exactly_the_supported_pythons():
    locks = sorted(p.name for p in (ROOT / "requirements").glob("py3*.txt"))
    assert locks == sorted(lock_requirements.lock_path(py).name for py in SUPPORTED)
    out = subprocess.run([str(ROOT / "tools" / "find_python.sh"), "--supported"], capture_output=True, text=True)
    assert out.stdout.split() == list(SUPPORTED), "the Makefile's interpreter search reads the same list"
    assert install_venv.supported() == list(SUPPORTED)


def test_pyproject_accepts_exactly_the_supported_pythons():
    text = (ROOT / "pyproject.toml").read_text()
    m = re.search(r'^requires-python = ">=3\.(\d+),<3\.(\d+)"$', text, re.M)
    assert m, "pyproject.toml: requires-python should be >=3.X,<3.Y"
    assert [f"3.{minor}" for minor in range(int(m.group(1)), int(m.group(2)))] == list(SUPPORTED)
    assert not re.search(r"^dependencies\s*=", text, re.M), "the pins live in requirements.txt only"


def test_colab_gets_only_the_runtime_pins_of_its_python():
    colab_py = lock_requirements.COLAB_PYTHON
    assert colab_py == "3.13", "Colab's runtimes are Python 3.13 since 2026-08-25 (docs/students.md)"
    lines = [
        ln
        for ln in (ROOT / "requirements" / "colab.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert lines == lock_requirements.runtime_pins(colab_py), "colab.txt is stale: run `make lock`"
    colab = {_norm(Requirement(ln).name): str(Requirement(ln).specifier)[2:] for ln in lines}
    assert colab["jax"] == _lock(colab_py)["jax"] and "matplotlib" in colab
    assert not TOOLING & set(colab), "Colab must not get JupyterLab, nbgrader, pytest, Playwright or ruff"
    assert all(_lock(colab_py)[name] == version for name, version in colab.items())


@pytest.mark.parametrize("py", SUPPORTED)
def test_install_venv_reads_the_markers_as_packaging_does(py):
    by_hand = {
        _norm(Requirement(pin).name): str(Requirement(pin).specifier)[2:] for pin in install_venv.direct_pins(py)
    }
    assert by_hand == _direct_pins(py)


def test_this_venv_has_exactly_its_lock_installed():
    py = "{}.{}".format(*sys.version_info[:2])
    wrong = {}
    for name, version in _lock(py).items():
        try:
            got = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            got = None
        if got != version:
            wrong[name] = (version, got)
    assert not wrong, (
        f"installed packages differ from requirements/py{py.replace('.', '')}.txt (locked, installed): "
        f"{wrong}; `make venv` reinstalls"
    )


def test_an_unsupported_python_gets_a_clear_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(install_venv, "version", lambda: "3.10")
    assert install_venv.main([str(tmp_path / "venv")]) == 1
    err = capsys.readouterr().err
    assert "Python 3.10" in err and "not supported" in err and "3.11, 3.12, 3.13" in err and "PYTHON=" in err
    assert not (tmp_path / "venv").exists(), "nothing is created for an unsupported Python"


def _fake_venv(tmp_path: Path, stamp: str | None) -> Path:
    """A folder whose bin/python is this interpreter (what install_venv asks a venv for), optionally stamped."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    if stamp is not None:
        (venv / install_venv.STAMP).write_text(stamp)
    return venv


def test_a_stamped_venv_starts_without_pip(monkeypatch, tmp_path, capsys):
    lock = install_venv.lock_for(install_venv.version())
    venv = _fake_venv(tmp_path, install_venv.stamp_text(lock, install_venv.ROOT / "pyproject.toml"))
    monkeypatch.setattr(install_venv, "pip", lambda *a, **k: pytest.fail("pip ran for an up-to-date venv"))
    assert install_venv.main([str(venv)]) == 0
    assert capsys.readouterr().out == "", "a later run prints nothing"


def test_a_changed_lock_reinstalls_and_says_what_and_how_long(monkeypatch, tmp_path, capsys):
    venv = _fake_venv(tmp_path, "python 3.0.0\nold-lock 0000\n")
    calls = []
    monkeypatch.setattr(install_venv, "pip", lambda venv, *args, **k: calls.append(args) or 7)
    assert install_venv.main([str(venv)]) == 0
    out = capsys.readouterr().out
    lock = install_venv.lock_for(install_venv.version())
    # the lock as it is (every dependency pinned: nothing for pip to resolve, so no "looking at multiple versions"
    # note), the course package, then pip check proves the lock complete
    assert calls == [
        ("install", "--no-deps", "-r", str(lock)),
        ("install", "--no-deps", "-e", str(install_venv.ROOT)),
        ("check",),
    ]
    assert f"Python {install_venv.version()}" in out and lock.name in out and "jax==" in out
    assert re.search(r"Installed into .* in \d+ s .*: 7 of the \d+ locked packages fetched now", out)
    assert (venv / install_venv.STAMP).read_text() == install_venv.stamp_text(
        lock, install_venv.ROOT / "pyproject.toml"
    )


def test_a_lock_that_misses_a_dependency_is_refused_by_pip_check(monkeypatch, tmp_path, capsys):
    """Installed with --no-deps, the lock must pin every dependency itself: `pip check` says so, or the venv is not
    stamped as installed (the next run tries again) and the maintainer is told to `make lock`."""
    venv = _fake_venv(tmp_path, "python 3.0.0\nold-lock 0000\n")
    monkeypatch.setattr(install_venv, "pip", lambda venv, *args, **k: None if args == ("check",) else 7)
    assert install_venv.main([str(venv)]) == 1
    assert (venv / install_venv.STAMP).read_text() == "python 3.0.0\nold-lock 0000\n"  # not stamped: tried again
    fake = install_venv.subprocess.CompletedProcess([], 1, stdout="jupyter-events 0.12.1 requires rfc3339-validator")
    monkeypatch.undo()
    monkeypatch.setattr(install_venv.subprocess, "run", lambda *a, **k: fake)
    assert install_venv.pip(venv, "check") is None
    err = capsys.readouterr().err
    assert "requires rfc3339-validator" in err and "`make lock` re-resolves it" in err


def test_a_venv_of_another_python_is_made_again(monkeypatch, tmp_path, capsys):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\necho 3.0\n")
    (venv / "bin" / "python").chmod(0o755)
    (venv / "leftover").write_text("from the old venv")
    made, run = [], subprocess.run

    def fake_run(cmd, **kwargs):  # records the venv creation, runs the rest (asking bin/python its version)
        if cmd[1:3] != ["-m", "venv"]:
            return run(cmd, **kwargs)
        made.append(cmd)
        Path(cmd[3]).mkdir()

    monkeypatch.setattr(install_venv.subprocess, "run", fake_run)
    monkeypatch.setattr(install_venv, "pip", lambda *a, **k: 0)
    assert install_venv.main([str(venv)]) == 0
    assert "was made with Python 3.0" in capsys.readouterr().out
    assert not (venv / "leftover").exists() and made == [[sys.executable, "-m", "venv", str(venv)]]


def test_the_install_step_reports_how_many_packages_are_in_place(tmp_path):
    """pip's "Installing collected packages" step is minutes of silence: install_venv.InstallProgress counts the
    .dist-info folders pip writes as each package lands, under the names pip prints."""
    import io

    site = tmp_path / "lib" / "site-packages"
    site.mkdir(parents=True)
    names = ["websocket-client", "PyYAML", "jax", "zope.interface"]
    progress = install_venv.InstallProgress(site, names, out=io.StringIO())
    assert progress.line().startswith("  installing: 0 of 4 packages in place (")
    for folder in (
        "websocket_client-1.9.2.dist-info",
        "pyyaml-6.0.4.dist-info",
        "zope.interface-7.2.dist-info",
        "jaxlib-0.10.2.dist-info",
    ):  # jaxlib is not jax
        (site / folder).mkdir()
    assert install_venv.installed_count(site, names) == 3
    assert progress.line().startswith("  installing: 3 of 4 packages in place (")
