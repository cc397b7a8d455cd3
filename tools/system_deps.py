"""The system packages the course needs: one table, one installer (`make system-deps`, `browser-deps`, `hub-deps`).

    python3 -m tools.system_deps [--dry-run] GROUP...      GROUP: fonts, grading, browser, hub, hub-test

Design: every package the course takes from the system is a row of `NEEDS`: what it is for, the Debian
package (or, for the browser tests' axe-core, the npm lock it is installed from), why, how to tell it is
there, and what happens without it. A row that is present costs nothing (the check only); a missing one
is installed with apt-get (apt-get update first when the package lists are stale) and its line says so:
every missing Debian package of the groups asked for in one apt-get call (`make test` asks for all its
groups at once), then each alone if that call fails, so that a package apt-get cannot have costs no other;
where that is impossible (no root, no apt-get, no network), the course still runs without it and a loud
WARNING says what is lost, except for rows marked `required` (the hub cannot start without its proxy's
Node.js), which stop with an error. Runs with any Python 3 (the standard library only), before a venv exists.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CJK_FONT = Path(os.environ.get("CJK_FONT") or "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
CHROMIUM = Path(os.environ.get("CHROMIUM") or "/usr/bin/chromium")
AXE_LOCK = ROOT / "tests" / "browser" / "axe"  # package.json and package-lock.json of axe-core
AXE_DIR = ROOT / "build" / "axe"


def _command(*names: str) -> Callable[[], bool]:
    return lambda: all(shutil.which(n) for n in names)


def _cjk_font() -> bool:
    if CJK_FONT.is_file():
        return True
    try:
        return bool(subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True).stdout.strip())
    except OSError:
        return False


def _library(soname: str) -> Callable[[], bool]:
    def present() -> bool:
        try:
            out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
        except OSError:
            return False
        return f"{soname} " in out

    return present


def _axe() -> bool:
    lock = AXE_DIR / "package-lock.json"
    installed = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
    return lock.is_file() and filecmp.cmp(AXE_LOCK / "package-lock.json", lock, shallow=False) and installed.is_file()


@dataclass(frozen=True)
class Need:
    what: str  # what it is, as the messages say it
    package: str  # Debian's package ("npm:" + the folder of an npm lock for axe-core)
    why: str  # what the course uses it for
    present: Callable[[], bool]
    without: str  # what is lost without it (the WARNING), or why the command stops (required)
    required: bool = False

    @property
    def npm_lock(self) -> str | None:
        """The folder of the npm lock it is installed from, or None for a Debian package."""
        return self.package.removeprefix("npm:") if self.package.startswith("npm:") else None


NEEDS: dict[str, tuple[Need, ...]] = {
    "fonts": (
        Need("fonts-wqy-microhei", "fonts-wqy-microhei", "Chinese text in figures", _cjk_font,
             "Chinese text in figures will show as boxes"),
    ),
    "grading": (
        Need("bubblewrap", "bubblewrap", "sandbox for grading student code", _command("bwrap"),
             "student code will be graded WITHOUT isolation"),
        Need("libseccomp2", "libseccomp2", "the system-call filter of the grading sandbox",
             _library("libseccomp.so.2"), "student kernels will run WITHOUT the system-call allow-list"),
    ),
    "browser": (
        Need("chromium", "chromium", "browser tests", lambda: os.access(CHROMIUM, os.X_OK),
             "the browser tests will be skipped"),
        Need("axe-core", "npm:tests/browser/axe",
             "the browser tests' accessibility checks: npm ci of tests/browser/axe/package-lock.json", _axe,
             "the accessibility tests will be skipped"),
    ),
    "hub": (
        Need("nodejs and npm", "nodejs npm", "JupyterHub's proxy, configurable-http-proxy, runs on Node.js",
             _command("node", "npm"), "install them, then make hub again", required=True),
    ),
}  # fmt: skip
NOT_ROOT_HUB = (
    "make hub needs root: it creates the course's Unix accounts (useradd, chpasswd), runs JupyterHub as root for "
    "PAM logins and servers as each student (LocalProcessSpawner), and chowns the hub's folders. Run it as root "
    "(make hub), or from an account that may use sudo: sudo make hub"
)


def _apt_install(packages: list[str]) -> bool:
    def apt(*args: str) -> bool:
        try:
            return subprocess.run(["apt-get", *args], capture_output=True).returncode == 0
        except OSError:
            return False

    return apt("install", "-y", "-qq", *packages) or (apt("update", "-qq") and apt("install", "-y", "-qq", *packages))


def _npm_install(lock_folder: str) -> bool:
    AXE_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(ROOT / lock_folder / name, AXE_DIR / name)
    cmd = ["npm", "ci", "--prefix", str(AXE_DIR), "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        return subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode == 0
    except OSError:
        return False


def _installed(need: Need) -> bool:
    """Is `need` there now (after an install)? Else a WARNING says what is lost, or an error when required."""
    if need.present():
        return True
    root = "" if os.geteuid() == 0 else " (not root: apt-get needs root)"
    if need.required:
        print(f"could not install {need.what} with apt-get{root}: {need.without}", file=sys.stderr)
    else:
        print(f"WARNING: could not install {need.what}{root}: {need.without}")
    return not need.required


def install(needs: Sequence[Need], dry_run: bool = False) -> bool:
    """Make every one of `needs` present: the missing Debian packages in one apt-get call (one package
    download and one dpkg run however many groups asked), then the npm locks (with the npm a Debian
    row may just have brought). False when a required one is still missing (the others only warn)."""
    missing = [need for need in needs if not need.present()]
    for need in missing:
        how = "npm ci" if need.npm_lock else "Debian's"
        if dry_run:
            print(f"would install {how} {need.npm_lock or need.package} ({need.why})")
        else:
            print(f"Installing {'' if need.npm_lock else how + ' '}{need.what} ({need.why})...", flush=True)
    if dry_run or not missing:
        return True
    debian = [need for need in missing if not need.npm_lock]
    if debian and not _apt_install([p for need in debian for p in need.package.split()]) and len(debian) > 1:
        for need in debian:  # one package apt-get cannot have must not cost the others
            _apt_install(need.package.split())
    for need in missing:
        if need.npm_lock:
            _npm_install(need.npm_lock)
    return all([_installed(need) for need in missing])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="say what is missing and would be installed")
    parser.add_argument("groups", nargs="+", choices=[*NEEDS, "hub-test"])
    args = parser.parse_args(argv)
    needs: list[Need] = []
    for group in args.groups:
        if group == "hub-test" and os.geteuid() != 0:  # make test: the hub's tests need root and skip without it
            print("NOTE: not root: the JupyterHub tests (real Unix accounts) will be skipped; CI runs them as root")
            continue
        if group in ("hub", "hub-test") and os.geteuid() != 0:
            print(NOT_ROOT_HUB, file=sys.stderr)
            return 1
        needs += [need for need in NEEDS["hub" if group == "hub-test" else group] if need not in needs]
    return 0 if install(needs, args.dry_run) else 1


if __name__ == "__main__":
    sys.exit(main())
