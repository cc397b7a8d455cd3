"""requirements.txt (pip, used by the Makefile) and environment.yml (conda) pin the same things."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# conda-forge names that differ from PyPI's
CONDA_TO_PIP = {"python-flatbuffers": "flatbuffers"}


def _pip_pins():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"requirements.txt: {line!r} is not pinned with =="
            pins[name.lower()] = version
    return pins


def _conda_pins():
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        m = re.match(r"^\s+-\s+([A-Za-z0-9_.-]+)=([0-9][^\s=]*)\s*$", line)
        if m and m.group(1) != "python":
            name = m.group(1).lower()
            pins[CONDA_TO_PIP.get(name, name)] = m.group(2)
    return pins


def test_requirements_and_environment_pin_the_same_versions():
    pip, conda = _pip_pins(), _conda_pins()
    assert pip == conda, f"drift between requirements.txt and environment.yml: pip={pip} conda={conda}"


def test_required_versions_are_pinned():
    pip = _pip_pins()
    assert pip["jax"] == "0.10.2" and pip["jaxlib"] == "0.10.2"
    assert pip["nbgrader"] == "0.9.6" and pip["nbval"] == "0.11.0"
    assert pip["jupyterlab"].startswith("4.6.") and pip["matplotlib"].startswith("3.11.")


def test_environment_uses_python_311():
    assert re.search(r"^\s+-\s+python=3\.11\s*$", (ROOT / "environment.yml").read_text(), re.M)
