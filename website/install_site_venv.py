"""`make site-venv`: the site's own venv, .venv-site, with website/requirements.txt installed, once.

    PYTHON -m website.install_site_venv VENV

Design: Sphinx, myst-nb and the book theme go into a venv of their own instead of the course's
lock (requirements.txt, requirements/pyXY.txt, colab.txt): the course's venv is what students,
graders and CI run the notebooks in, Colab installs its runtime part, and neither should carry a
documentation toolchain or have its shared packages (ipykernel, nbclient, PyYAML) moved by one.
Rendering needs no JAX: the notebooks are executed in the course's venv (execute_notebooks.py)
and Sphinx only reads the results. Like tools/install_venv.py (whose pip runner this reuses), a
stamp in VENV records the Python version and the lock's hash; when it matches, this returns at
once, so a cached `make site` starts in well under a second.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from tools import install_venv  # run as a module from the checkout's root: importable without the course package

HERE = Path(__file__).resolve().parent

LOCK = HERE / "requirements.txt"
STAMP = ".installed"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    venv = Path(argv[0])
    stamp = venv / STAMP
    py = install_venv.version()
    if stamp.exists() and stamp.read_text() == install_venv.stamp_text(LOCK) and install_venv.venv_version(venv) == py:
        return 0
    found = install_venv.venv_version(venv)
    if found not in (None, py):
        print(f"{venv}/ was made with Python {found}, this is Python {py}: making it again.")
        shutil.rmtree(venv)
    started = time.monotonic()
    n = len(install_venv.pinned_names(LOCK))
    print(
        f"Installing the site's packages into {venv}/ (first run, or website/requirements.txt changed): Python {py}, "
        f"{n} packages pinned in website/requirements.txt (Sphinx, myst-nb, sphinx-book-theme, MathJax).",
        flush=True,
    )
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    fetched = install_venv.pip(venv, "install", "-r", str(LOCK), locked=install_venv.pinned_names(LOCK))
    stamp.write_text(install_venv.stamp_text(LOCK))
    print(f"Installed into {venv}/ in {time.monotonic() - started:.0f} s ({fetched} packages fetched now).", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
