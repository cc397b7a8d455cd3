"""Make VENV a venv of the Python running this script with the course's lock installed, once.

    PYTHON -m tools.install_venv VENV        (the Makefile's `venv` and `venv-newest` targets)

Design: the lock is requirements/pyXY.txt for this interpreter's version (`make lock` writes
one per supported Python; no lock means unsupported, a clear error). A stamp file in VENV
records the interpreter version and the SHA-256 of the lock and of pyproject.toml; when it
matches, this exits at once without starting pip, so every later `make lab` or `make test`
starts in well under a second. Otherwise it says what it installs (Python version, lock,
package count, the direct pins) and installs the lock as it is (`--no-deps`: the lock pins every
dependency, so pip has nothing to resolve), then proves it complete with `pip check`; on the way it
streams one numbered line per locked package as pip collects
it (never a number past the lock's count: `Collected`), then,
during pip's long silent install step, a line every 15 s with how many packages are in place
(their .dist-info folders), installs the course package editable, and says how long it took. A
venv made by another Python version is rebuilt (a venv holds nothing of the student's; their notebooks live elsewhere).
Only the standard library: it runs before the venv exists.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMP = ".installed"
# pip's lines that say nothing about this install (an extra index configured on this machine that does not exist)
NOISE = ("WARNING: Location 'file://",)


def version() -> str:
    return "{}.{}".format(*sys.version_info[:2])


def lock_for(py: str) -> Path:
    return ROOT / "requirements" / f"py{py.replace('.', '')}.txt"


def supported() -> list[str]:
    found = sorted(ROOT.glob("requirements/py3*.txt"), key=lambda p: int(p.stem[3:]))
    return [f"3.{p.stem[3:]}" for p in found]


def stamp_text(lock: Path, *also: Path) -> str:
    """What a venv's stamp file says it was installed from: this Python's version, the lock's name and one
    digest of the lock and `also` (a venv whose stamp differs is installed again)."""
    digest = hashlib.sha256()
    for path in (lock, *also):
        digest.update(path.read_bytes())
    return f"python {sys.version.split()[0]}\n{lock.name} {digest.hexdigest()}\n"


def venv_version(venv: Path) -> str | None:
    py = venv / "bin" / "python"
    if not py.exists():
        return None
    out = subprocess.run(
        [str(py), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
    )
    return out.stdout.strip() if out.returncode == 0 else "broken"


def pinned_names(lock: Path) -> list[str]:
    return [line.strip() for line in lock.read_text().splitlines() if line.strip() and not line.startswith("#")]


def direct_pins(py: str) -> list[str]:
    """requirements.txt's direct pins that apply to Python `py` (markers read by hand: stdlib only)."""
    pins = []
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        pin, _, marker = line.partition(";")
        m = re.fullmatch(r'\s*python_version\s*(<|>=)\s*"3\.(\d+)"\s*', marker)
        if marker and m:
            minor = int(py.split(".")[1])
            if (m.group(1) == "<") != (minor < int(m.group(2))):
                continue
        pins.append(pin.strip())
    return pins


def _dist_name(name: str) -> str:
    """A distribution name as its .dist-info folder spells it (PEP 503-ish: lower case, '-' and '.' as '_')."""
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_count(site_packages: Path, names: list[str]) -> int:
    """How many of `names` have a .dist-info in site_packages: pip writes it when a package is in place."""
    try:
        present = {
            _dist_name(p.name[: -len(".dist-info")].rsplit("-", 1)[0]) for p in site_packages.glob("*.dist-info")
        }
    except OSError:
        return 0
    return sum(1 for n in names if _dist_name(n) in present)


class InstallProgress(threading.Thread):
    """While pip installs (its silent minutes), one line every `every` seconds: how many packages are in place."""

    def __init__(self, site_packages: Path, names: list[str], every: float = 15.0, out=None):
        super().__init__(daemon=True)
        self.site, self.names, self.every, self.out = site_packages, names, every, out or sys.stdout
        self.done = threading.Event()
        self.started = time.monotonic()

    def line(self) -> str:
        n = installed_count(self.site, self.names)
        return f"  installing: {n} of {len(self.names)} packages in place ({time.monotonic() - self.started:.0f} s)"

    def run(self) -> None:
        while not self.done.wait(self.every):
            print(self.line(), file=self.out, flush=True)

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=5)


def site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{version()}" / "site-packages"


def requirement_name(spec: str) -> str:
    """The distribution a requirement or a wheel names: `jsonschema[format-nongpl]>=4.18` -> jsonschema."""
    if spec.endswith(".whl"):  # a wheel file: name-version-...whl
        spec = Path(spec).name.split("-")[0]
    m = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec)
    return _dist_name(m.group(0) if m else spec)


class Collected:
    """Numbers each locked package the first time pip collects it, and nothing else.

    pip also says "Collecting" for a dependency's extras (`jsonschema[format-nongpl]>=4.18.0`) and
    for the candidates its resolver tries and drops (`jsonschema==4.25.1`): those are the same
    locked package again, or none, and counting them showed `[143]` of 141.
    """

    def __init__(self, locked: list[str]):
        self.locked = {requirement_name(spec) for spec in locked}
        self.seen: set[str] = set()

    def number(self, what: str) -> int | None:
        """The package's number when `what` is a locked package collected for the first time, else None."""
        name = requirement_name(what)
        if name not in self.locked or name in self.seen:
            return None
        self.seen.add(name)
        return len(self.seen)


def pip(venv: Path, *args: str, locked: list[str] | None = None) -> int | None:
    """Run the venv's pip; given the `locked` requirements, one line per locked package it fetches
    (returns their count). `pip check`: None (and why, on stderr) when the venv's packages are inconsistent."""
    cmd = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", *args]
    if args[:1] == ("check",):  # what pip check finds: the lock misses a dependency, or two pins disagree
        found = subprocess.run(cmd, capture_output=True, text=True)
        if found.returncode:
            print(
                f"{venv}/ is incomplete: the lock does not hold every dependency its packages need (pip check):\n"
                f"{found.stdout.strip()}\nMaintainers: `make lock` re-resolves it.",
                file=sys.stderr,
            )
            return None
        return 0
    if locked is None:
        subprocess.run(cmd + ["-q"], check=True)
        return 0
    collected = Collected(locked)
    proc = subprocess.Popen(
        cmd + ["--progress-bar", "off"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    progress = None
    for line in proc.stdout:
        if line.startswith(("Collecting ", "Processing ")):  # from the registry / a local wheel
            what = line.split()[1]
            if what.endswith(".whl"):
                what = "==".join(Path(what).name.split("-")[:2])
            if (number := collected.number(what)) is not None:
                print(f"  [{number:3d}] {what}", flush=True)
        elif line.startswith(("Installing collected", "Successfully")):
            print("  " + (line.rstrip()[:150] + " ..." if len(line) > 150 else line.rstrip()), flush=True)
            if line.startswith("Installing collected") and progress is None:
                names = [n.strip() for n in line.split(":", 1)[1].split(",") if n.strip()]
                progress = InstallProgress(site_packages(venv), names)
                progress.start()
            elif progress is not None:
                progress.stop()
                progress = None
        elif not line.startswith(NOISE) and not line.startswith(("  ", "Downloading", "Looking in", "Requirement")):
            print(line.rstrip(), flush=True)  # warnings and errors pass through
    if progress is not None:
        progress.stop()
    if proc.wait():
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return len(collected.seen)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    venv = Path(argv[0])
    py, lock = version(), lock_for(version())
    if not lock.exists():
        print(
            f"Python {py} ({sys.executable}) is not supported: this course has locks for Python "
            f"{', '.join(supported())} (requirements/pyXY.txt).\nInstall one of those, or point the "
            f"Makefile at it: make ... PYTHON=/path/to/python3.X (tools/find_python.sh lists what is "
            f"looked for).",
            file=sys.stderr,
        )
        return 1
    stamp = venv / STAMP
    want = stamp_text(lock, ROOT / "pyproject.toml")
    if stamp.exists() and stamp.read_text() == want and venv_version(venv) == py:
        return 0
    found = venv_version(venv)
    if found not in (None, py):
        print(f"{venv}/ was made with Python {found}, this is Python {py}: making it again.")
        shutil.rmtree(venv)
    started = time.monotonic()
    n = len(pinned_names(lock))
    print(
        f"Installing the course's packages into {venv}/ (first run, or {lock.name} or pyproject.toml "
        f"changed): Python {py} "
        f"({sys.executable}), {n} packages pinned in requirements/{lock.name}: {', '.join(direct_pins(py))}, "
        f"and their dependencies. This takes a few minutes; later runs skip it.",
        flush=True,
    )
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # the lock pins every package, dependencies included: pip installs the list as it is, with no resolving (which
    # printed pip's "looking at multiple versions of jsonschema[format-nongpl]" note for a lock with nothing to
    # choose), and `pip check` then proves the list complete and consistent
    fetched = pip(venv, "install", "--no-deps", "-r", str(lock), locked=pinned_names(lock))
    pip(venv, "install", "--no-deps", "-e", str(ROOT))
    if pip(venv, "check") is None:
        return 1
    stamp.write_text(want)
    took = time.monotonic() - started
    print(
        f"Installed into {venv}/ in {took:.0f} s ({took / 60:.1f} min): {fetched} of the {n} locked packages "
        f"fetched now ({n - fetched} already there) and the course package. Later runs skip this.",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main(sys.argv[1:]))
