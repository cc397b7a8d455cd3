"""The student's and the instructor's Jupyter: `make lab`, `make update-work`, `make formgrader`.

    python -m tools.lab lab [--edition zh] [--student ID] [--lab-dir DIR] [--exchange DIR] [--port N] ...
    python -m tools.lab update-work [--student ID] [--lab-dir DIR] [--release DIR] [--release-zh DIR] [--yes]
    python -m tools.lab formgrader [--edition zh] [--course DIR] [--exchange DIR] [--port N] ...

Design: the Makefile passes the variables it was given as options; this module resolves what they mean
(the workspace work/ or work-ID/, its edition folder, the release, the course and the exchange, from
courseinfo.course) and starts JupyterLab through tools/serve.py, replacing itself with it (exec).

- lab: JupyterLab on the student's own workspace LAB_DIR (work/; work-ID/ with STUDENT=ID), never on
  notebooks/ (the release): tools/workspace.py copies in the notebooks it lacks and never overwrites a
  file. STUDENT=ID is a class on one machine: the Assignment List fetches and hands in as that student
  (JUPYTERHUB_USER, see jupyter/nbgrader_config.py) and nothing is seeded. EDITION=zh opens LAB_DIR/zh/,
  JupyterLab's menus in Chinese (jupyter/zh) and nbgrader's buttons in Chinese (a translated copy of the
  installed extension in build/jupyter-zh, tools/nbgrader_zh.py); with STUDENT=ID it is the Chinese
  nbgrader course. nbgrader's Validate button and Assignment List are on (formgrader off). Each edition keeps
  its own JupyterLab layout (open tabs: `workspaces_dir`).
- update-work: merges a newer release into the workspace (notebooks/, or with STUDENT=ID the exchange's
  release), both editions; answers kept, every changed notebook backed up first (tools/workspace.py).
- formgrader: nbgrader's formgrader on a course folder (build/course, build/zh/course with EDITION=zh)
  for manual review; its unsafe buttons are disabled by the config path the Makefile gives it
  (FORMGRADER_CONFIG_PATH: jupyter/formgrader, autograder/formgrader).
"""

from __future__ import annotations

import argparse
import os
import pwd
import shlex
import subprocess
import sys
from pathlib import Path

from courseinfo.course import EDITIONS, EXCHANGE, NOTEBOOKS, ROOT, built_course, course_id, edition_folder
from tools import compile_cache

JUPYTER = ROOT / "jupyter"
NBGRADER_ZH = ROOT / "build" / "jupyter-zh"  # nbgrader's lab extension in Chinese (tools/nbgrader_zh.py)


def _workspace(args) -> Path:
    """LAB_DIR as given (relative to the checkout's root, where make runs): work/, work-ID/ with --student."""
    return Path(args.lab_dir or (f"work-{args.student}" if args.student else "work"))


def workspaces_dir(work: Path, edition: str) -> Path:
    """Where JupyterLab keeps this lab's layout (its open tabs, JUPYTERLAB_WORKSPACES_DIR): one folder per
    workspace and edition, so `make lab EDITION=zh` never reopens the English lab's tabs (their paths are
    the English folder's) nor another student's. Under the folder the environment names, where one is named."""
    named = os.environ.get("JUPYTERLAB_WORKSPACES_DIR")
    return (Path(named) if named else work / ".jupyterlab-workspaces") / (edition or "en")


def _serve(args, what: str, path: str, command: list[str], env: dict[str, str], cwd: Path) -> None:
    """Replace this process with tools/serve.py running `command` (the URL with its token comes last)."""
    serve = [sys.executable, "-m", "tools.serve", "--port", str(args.port), "--path", path, "--what", what]
    serve += ["--token", args.lab_token] if args.lab_token else []
    os.chdir(cwd)
    os.execvpe(sys.executable, [*serve, "--", *command, *shlex.split(args.lab_args)], {**os.environ, **env})


def lab(args) -> int:
    work = _workspace(args)
    opened = edition_folder(work, args.edition)
    prepare = [str(opened), "--no-seed", "--student", args.student] if args.student else [str(work)]
    if subprocess.run([sys.executable, "-m", "tools.workspace", "prepare", *prepare]).returncode:
        return 1
    zh = args.edition == "zh"
    if zh and subprocess.run([sys.executable, "-m", "tools.nbgrader_zh", "build", str(NBGRADER_ZH)]).returncode:
        print("WARNING: nbgrader's buttons stay English (above: why)")
    opened.mkdir(parents=True, exist_ok=True)
    if not args.exchange:
        EXCHANGE.mkdir(parents=True, exist_ok=True)
    who = f" as student {args.student}" if args.student else ""
    which = " (Chinese edition)" if args.edition else ("" if args.student else " (Chinese edition: zh/)")
    print(f"Starting JupyterLab on your workspace {opened}/{who}{which}; the URL to open, with its token, comes last")
    if args.student:
        print(
            f"Note: every make lab on this machine runs as the same OS user ({pwd.getpwuid(os.geteuid()).pw_name}): "
            "classmates can read each other's work. A real class: make hub (docs/instructors.md)."
        )
    config = [JUPYTER, JUPYTER / "nbgrader", *([JUPYTER / "zh"] if zh else [])]
    env = {
        "JUPYTER_CONFIG_PATH": os.pathsep.join(map(str, config)),
        "JUPYTER_PATH": os.pathsep.join(map(str, [*([NBGRADER_ZH] if zh else []), JUPYTER / "data"])),
        "NAMEDAXES_WORK": str(opened.absolute()),
        "JUPYTERLAB_WORKSPACES_DIR": str(workspaces_dir(work, args.edition).absolute()),
        **({"NAMEDAXES_EXCHANGE": str(Path(args.exchange).absolute())} if args.exchange else {}),
        **({"JUPYTERHUB_USER": args.student} if args.student else {}),
        **({"NAMEDAXES_COURSE_ID": course_id(args.edition)} if args.edition else {}),
        **compile_cache.private(compile_cache.for_workspace(work)),  # its own compiled programs, outside work/
    }
    jupyter = [str(Path(sys.executable).parent / "jupyter"), "lab", f"--notebook-dir={opened}", "--no-browser"]
    _serve(args, "JupyterLab", first_page(opened, workspaces_dir(work, args.edition)), jupyter, env, ROOT)
    return 1


FIRST_NOTEBOOK = "01_axis_names.ipynb"


def first_page(opened: Path, layouts: Path) -> str:
    """The page the URL opens: notebook 01 on a lab's first start (no layout kept yet, 01 in the folder),
    rather than JupyterLab's stock Launcher; afterwards the lab as the student left it."""
    fresh = not layouts.is_dir() or not any(layouts.iterdir())
    return f"/lab/tree/{FIRST_NOTEBOOK}" if fresh and (opened / FIRST_NOTEBOOK).is_file() else "/lab"


def update_work(args) -> int:
    exchange = Path(args.exchange) if args.exchange else EXCHANGE
    release = args.release or (exchange / course_id() / "outbound" if args.student else NOTEBOOKS)
    editions = []
    for lang in EDITIONS:
        default = exchange / course_id(lang) / "outbound" if args.student else edition_folder(Path(release), lang)
        editions += ["--edition", f"{lang}={(args.release_zh if lang == 'zh' else None) or default}"]
    cmd = ["update", str(_workspace(args)), "--release", str(release), *editions, *(["--yes"] if args.yes else [])]
    return subprocess.run([sys.executable, "-m", "tools.workspace", *cmd]).returncode


def formgrader(args) -> int:
    if args.hub:
        print("make formgrader HUB=1: the hub's formgrader is its service /services/<course>/formgrader (make hub)")
        return 1
    course = Path(args.course or built_course(args.edition)).absolute()
    if not (course / "nbgrader_config.py").is_file():
        handin = [sys.executable, "-m", "tools.handin", "--course", str(course), "--edition", args.edition, "layout"]
        if subprocess.run(handin).returncode:
            return 1
    EXCHANGE.mkdir(parents=True, exist_ok=True)
    print(f"Starting formgrader on the course {course}; the /formgrader URL to open, with its token, comes last")
    env = {"JUPYTER_PATH": str(JUPYTER / "data")}
    env |= {"NAMEDAXES_EXCHANGE": str(Path(args.exchange).absolute())} if args.exchange else {}
    jupyter = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", "--allow-root"]
    _serve(args, "formgrader", "/formgrader", jupyter, env, course)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("lab", "update-work", "formgrader"):
        p = sub.add_parser(name)
        p.add_argument("--edition", default="", choices=["", "en", *EDITIONS])
        p.add_argument("--student", default="")
        p.add_argument("--lab-dir", default="", help="the workspace (default work/, work-ID/ with --student)")
        p.add_argument("--exchange", default="", help=f"nbgrader's exchange (default {EXCHANGE.relative_to(ROOT)})")
        p.add_argument("--port", type=int, default=8888)
        p.add_argument("--lab-token", default="", help="the login token (default: a fresh one)")
        p.add_argument("--lab-args", default="", help="more options for jupyter lab")
        p.add_argument("--release", default="", help="the release to merge (update-work)")
        p.add_argument("--release-zh", default="", help="the Chinese edition's release (update-work)")
        p.add_argument("--yes", action="store_true", help="merge even where an edit cannot be kept (update-work)")
        p.add_argument("--course", default="", help="the nbgrader course (formgrader)")
        p.add_argument("--hub", action="store_true", help="the hub's course: refused (formgrader is a hub service)")
    args = parser.parse_args(argv)
    args.edition = "" if args.edition == "en" else args.edition
    return {"lab": lab, "update-work": update_work, "formgrader": formgrader}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
