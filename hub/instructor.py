"""The instructor's commands on the hub's courses (`make release|collect|return-feedback|grade|export HUB=1`).

    python -m hub.instructor [--edition zh] release|collect|return-feedback [ARGS...]   as the course's grader
    python -m hub.instructor [--edition zh] grade|export [ARGS...]                      as root, then own

Design: `handin_command` is the one spelling of "the hand-in tool as the course's grader": tools/handin.py run
by the course's grader account (runuser) with the deployment's venv, the hub's course folder and exchange,
and a minimal environment. hub/server.py (the roster at `make hub`), the Makefile (through `main`) and the
hub's tests run it from here. Grading writes into the course as root (the sandbox needs it), so `grade`
and `export` run tools/handin.py here and give the course back to its grader after (layout.own).
The deployment comes from the environment (Deployment.from_env: NAMEDAXES_HUB_*, the Makefile's HUB_ENV).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from courseinfo.course import EDITIONS, course_id
from hub import layout
from hub.deployment import ROOT, Deployment
from tools import handin

RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"


def handin_command(dep: Deployment, course: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """argv and environment of `python -m tools.handin --course <course> --exchange <exchange> ARGS...` as
    that course's grader (runuser, the deployment's venv, a minimal environment); run it with cwd=ROOT."""
    grader = dep.graders[course]
    python = str(dep.venv / "bin" / "python")
    tool = [python, "-m", "tools.handin", "--course", str(dep.course_dir(course)), "--exchange", str(dep.exchange)]
    env = {
        "PATH": f"{dep.venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(dep.home(grader)),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return [RUNUSER, "-u", grader, "--", *tool, *args], env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edition", default="", choices=["", "en", *EDITIONS])
    parser.add_argument("command", choices=["roster", "release", "collect", "return-feedback", *handin.AUTOGRADER])
    args, rest = parser.parse_known_args(argv)
    dep = Deployment.from_env()
    course = course_id("" if args.edition == "en" else args.edition)
    if args.command == "roster":  # the hub imports a roster as it starts: make hub ROSTER=students.csv
        print(handin.ROSTER_USAGE.replace("ROSTER=students.csv", "ROSTER=students.csv HUB=1"), file=sys.stderr)
        return 1
    if args.command in handin.AUTOGRADER:
        status = handin.main(["--course", str(dep.course_dir(course)), args.command, *rest])
        print("\n".join(layout.own(dep)))
        return status
    argv, env = handin_command(dep, course, args.command, *rest)
    os.chdir(ROOT)
    return subprocess.run(argv, env=env, stdin=subprocess.DEVNULL).returncode


if __name__ == "__main__":
    sys.exit(main())
