"""A Chinese copy of nbgrader's JupyterLab extension, for the Chinese workspace and the hub's Chinese server.

    python -m tools.nbgrader_zh build OUT      # OUT/labextensions/@jupyter/nbgrader: put OUT first on JUPYTER_PATH
    python -m tools.nbgrader_zh check          # every msgid of the catalog is in the installed extension

Why a copy: JupyterLab's zh-CN language pack translates what JupyterLab and its extensions pass through
JupyterLab's translator (`trans.__()`), but nbgrader's extension (@jupyter/nbgrader 0.9.6) writes its strings
as literals: the Validate button, its "Validation Results" dialog and the Assignment List stay English,
whatever the language pack. So the course makes a translated copy of the installed extension:

- The catalog is `locale/zh/nbgrader-labextension.po` (English as the extension shows it -> Chinese).
- Each msgid is replaced where it is a whole string of the bundle: between quotes, or as the text of an
  element of its HTML template (between `>`/`\\n` and `<`/`\\n`, spaces kept), never inside a longer string
  or an identifier. A msgid found nowhere is an error that names it (a newer nbgrader changed it), so the
  Chinese edition never silently turns English again.
- Changed chunks get a new content hash in their file name (and the remoteEntry that maps them, and
  `package.json`'s `jupyterlab._build.load`): JupyterLab serves extension files as immutable, so a browser that
  once loaded the English chunk from the same URL would otherwise keep showing it.
- JupyterLab takes the first extension of a name along its labextensions path (jupyterlab_server's
  `get_federated_extensions`), and JUPYTER_PATH comes first: OUT on JUPYTER_PATH shadows the installed
  English extension for that server only. The installed files are never modified.
- Idempotent: OUT holds a stamp (the hash of the installed extension's files, the catalog and this tool);
  when it matches nothing is written. Otherwise the copy is made in a fresh folder and swapped in whole,
  under a lock (OUT/.lock), so that two servers starting at once never see half a copy.

Used by `make lab EDITION=zh` (OUT = build/jupyter-zh) and by the hub (hub/server.py: HUB_DIR/jupyter-zh,
for each student's Chinese server, hub/jupyterhub_config.py).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "locale" / "zh" / "nbgrader-labextension.po"
EXTENSION = Path("@jupyter") / "nbgrader"
STAMP = ".namedaxes-zh-stamp"
HASHED = re.compile(r"^(?P<stem>.+)\.(?P<hash>[0-9a-f]{16,20})\.js$")


class TranslationError(RuntimeError):
    pass


def installed(prefix: Path | None = None) -> Path:
    """The installed (English) extension of the venv at `prefix` (default: this Python's)."""
    return Path(prefix or sys.prefix) / "share" / "jupyter" / "labextensions" / EXTENSION


def catalog(path: Path | None = None) -> dict[str, str]:
    path = path or CATALOG
    with path.open("rb") as fh:
        po = read_po(fh)
    table = {m.id: m.string for m in po if m.id and m.string and not m.fuzzy}
    missing = [m.id for m in po if m.id and (not m.string or m.fuzzy)]
    if missing:
        raise TranslationError(f"{path.name}: untranslated or fuzzy: {missing}")
    return table


def _pattern(msgid: str) -> re.Pattern:
    # a whole string: opened by a quote, `>` or an escaped newline, closed by a quote, `<`, `\n` or `${`
    return re.compile(r"""(?P<l>["'`>]|\\n)(?P<a> *)""" + re.escape(msgid) + r"""(?P<b> *)(?P<r>["'`<]|\\n|\$\{)""")


def translated_source(source: str, table: dict[str, str]) -> tuple[str, dict[str, int]]:
    """`source` with every whole-string occurrence of each msgid replaced; how many of each were replaced."""
    counts = {}
    for msgid in sorted(table, key=len, reverse=True):
        replacement = table[msgid].replace("\\", "\\\\")
        source, counts[msgid] = _pattern(msgid).subn(
            lambda m, r=replacement: m["l"] + m["a"] + r + m["b"] + m["r"], source
        )
    return source, counts


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.name).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def _stamp(source: Path, table_path: Path) -> str:
    files = sorted(p for p in source.rglob("*") if p.is_file())
    return _digest([*files, table_path, Path(__file__)])


def translated_files(source: Path, table: dict[str, str]) -> tuple[dict[str, str], set[str]]:
    """(relative path -> new text of each changed JS file, renamed with a new content hash, and of the remoteEntry
    and package.json rewritten to point at the new names; the names in static/ these replace).
    Raises if a msgid is found nowhere."""
    static = source / "static"
    totals = dict.fromkeys(table, 0)
    changed: dict[str, str] = {}  # old name -> new text
    for js in sorted(static.glob("*.js")):
        if js.name.startswith("remoteEntry."):
            continue
        text = js.read_text(encoding="utf-8")
        new, counts = translated_source(text, table)
        for k, n in counts.items():
            totals[k] += n
        if new != text:
            changed[js.name] = new
    missing = [k for k, n in totals.items() if n == 0]
    if missing:
        version = json.loads((source / "package.json").read_text())["version"]
        raise TranslationError(
            f"{len(missing)} msgid(s) of locale/zh/{CATALOG.name} are not in nbgrader's lab extension "
            f"{version} ({source}): {missing}. Update them to what this nbgrader shows."
        )
    out: dict[str, str] = {}
    entry = next(static.glob("remoteEntry.*.js"))
    entry_text = entry.read_text(encoding="utf-8")
    for name, text in changed.items():
        m = HASHED.match(name)
        if not m:
            raise TranslationError(f"{name}: not a content-hashed chunk name; cannot rename it")
        new_hash = hashlib.sha256(text.encode()).hexdigest()[: len(m["hash"])]
        if not entry_text.count(f'"{m["hash"]}"'):  # the chunk's file name and its `?v=` both use it
            raise TranslationError(f"{entry.name} does not map chunk {name}")
        entry_text = entry_text.replace(f'"{m["hash"]}"', f'"{new_hash}"')
        out[f"static/{m['stem']}.{new_hash}.js"] = text
    em = HASHED.match(entry.name)
    entry_name = f"remoteEntry.{hashlib.sha256(entry_text.encode()).hexdigest()[: len(em['hash'])]}.js"
    out[f"static/{entry_name}"] = entry_text
    package = json.loads((source / "package.json").read_text(encoding="utf-8"))
    package["jupyterlab"]["_build"]["load"] = f"static/{entry_name}"
    out["package.json"] = json.dumps(package, indent=2) + "\n"
    return out, {entry.name, *changed}


def build(out: Path, source: Path | None = None, table_path: Path | None = None) -> Path:
    """Write (or keep, when its stamp matches) OUT/labextensions/@jupyter/nbgrader; return OUT.
    Readable by everyone (the hub's students' servers load it)."""
    source, table_path = source or installed(), table_path or CATALOG
    if not (source / "package.json").is_file():
        raise TranslationError(f"nbgrader's lab extension is not installed at {source}")
    target = out / "labextensions" / EXTENSION
    stamp = _stamp(source, table_path)
    if (target / STAMP).is_file() and (target / STAMP).read_text() == stamp:
        return out
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:  # two `make lab EDITION=zh` at once (a class on one machine)
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ((target / STAMP).is_file() and (target / STAMP).read_text() == stamp):
            _write(out, target, source, table_path, stamp)
    return out


def _write(out: Path, target: Path, source: Path, table_path: Path, stamp: str) -> None:
    files, removed = translated_files(source, catalog(table_path))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".nbgrader-zh-", dir=target.parent))
    try:
        shutil.copytree(source, tmp, dirs_exist_ok=True, ignore=lambda d, names: [n for n in names if n in removed])
        for rel, text in files.items():
            (tmp / rel).write_text(text, encoding="utf-8")
        (tmp / STAMP).write_text(stamp)
        for p in [tmp, *tmp.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        old = target.with_name(f".old-{os.getpid()}-{target.name}")
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for p in (out, out / "labextensions", target.parent):
        os.chmod(p, 0o755)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.nbgrader_zh", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write OUT/labextensions/@jupyter/nbgrader (Chinese)")
    b.add_argument("out", type=Path)
    b.add_argument("--prefix", type=Path, help="the venv whose nbgrader to translate (default: this one)")
    c = sub.add_parser("check", help="every msgid is in the installed extension")
    c.add_argument("--prefix", type=Path)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "build":
            build(args.out, installed(args.prefix))
        else:
            translated_files(installed(args.prefix), catalog())
    except TranslationError as err:
        if args.cmd == "build":  # never an older nbgrader's copy beside this one's server: English instead
            shutil.rmtree(args.out / "labextensions" / EXTENSION, ignore_errors=True)
        print(f"nbgrader's Chinese lab extension: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
