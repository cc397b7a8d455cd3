"""`python -m tools.translate extract|update|compile|check [--sync] [NAMES...]` (the package's docstring)."""

from __future__ import annotations

import argparse
import sys

from tools import translate

from . import catalogs
from .catalogs import DOMAIN, catalog_names
from .merging import compile_catalogs, update
from .templates import template
from .verify import check


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.translate",
        description=translate.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=("extract", "update", "compile", "check"))
    parser.add_argument("--sync", action="store_true", help="check: only that catalogs and .mo match the English")
    parser.add_argument("names", nargs="*", help=f"catalogs: {DOMAIN} and/or notebook ids (default: all)")
    args = parser.parse_intermixed_args(argv)
    names = args.names or catalog_names()
    unknown = sorted(set(names) - set(catalog_names()))
    if unknown:
        parser.error(f"unknown catalog(s) {unknown}; the catalogs are {catalog_names()}")
    if args.command == "extract":
        out = catalogs.ROOT / "build" / "i18n"
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            (out / f"{name}.pot").write_bytes(catalogs.po_bytes(template(name)))
        print(f"wrote {len(names)} templates to {out.relative_to(catalogs.ROOT)}/")
    elif args.command == "update":
        changed = update(names)
        print("updated: " + (", ".join(changed) if changed else "nothing changed"))
    elif args.command == "compile":
        changed = compile_catalogs()
        print("compiled: " + (", ".join(changed) if changed else "nothing changed"))
    else:
        return check(names, sync_only=args.sync)
    return 0


if __name__ == "__main__":
    sys.exit(main())
