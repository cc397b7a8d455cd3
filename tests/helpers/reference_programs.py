"""What a student would look for to read a reference program (issue 58): the recorded reference programs'
marks, and a small program that searches every file it can read under some folders for them (opening
compressed files too). The attack fixtures run it as a graded kernel (tests/autograder/sandbox/test_view.py),
as a hub student (tests/hub/test_isolation.py) and on the checkout itself
(tests/namedaxes/test_recorded_programs.py)."""

from __future__ import annotations

import json
import lzma

from tools.compile_for_topology import REFERENCES

# every reference program the grader compiles is its `compile_exported`'s `flat_call`: its HLO module's name
MODULE_MARK = "HloModule jit_flat_call"


def marks(label: str = "cpu") -> list[str]:
    """Strings only a reference program record holds: the module name of their texts and every program id
    (`<notebook>/<test cell>/<case>`) of the record."""
    record = json.loads((REFERENCES / f"references-{label}.json").read_text(encoding="utf-8"))
    texts = json.loads(lzma.decompress((REFERENCES / f"references-hlo-{label}.json.xz").read_bytes()))
    assert texts and all(text.startswith(MODULE_MARK) for text in texts.values())  # the mark marks them all
    return [MODULE_MARK, *sorted(record["programs"])]


# argv: a JSON list of marks, then folders. Prints {"files": n, "found": [[path, mark], ...], "refused": [...]}.
SEARCH = r"""
import gzip, json, lzma, os, sys
marks, roots = json.loads(sys.argv[1]), sys.argv[2:]
found, refused, files = [], [], 0
for root in roots:
    for here, dirs, names in os.walk(root, onerror=lambda e: refused.append(e.filename)):
        for name in names:
            path = os.path.join(here, name)
            try:
                with open(path, "rb") as fh:
                    data = fh.read(64 << 20)
            except OSError:
                refused.append(path)
                continue
            files += 1
            for opener in (gzip.decompress, lzma.decompress):
                try:
                    data = opener(data)
                except Exception:
                    pass
            text = data.decode("utf-8", "replace")
            found += [[path, m] for m in marks if m in text]
print(json.dumps({"files": files, "found": found, "refused": refused}))
"""
