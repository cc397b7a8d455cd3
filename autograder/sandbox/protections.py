"""The protections report: which safeguards are in force for a grading run, and why any is missing.

A grader that silently degrades (no cgroups in a container, not root, no user
namespaces) would let an instructor believe a hostile class is contained when
it is not. So every protection is one typed record, `available` or not, with a
`detail` that says how it is enforced or why it is missing and what is done
instead. The grader prints `summary_lines()` and writes `as_json()` into
`results.json` under the key `"protections"`, where the class report shows it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["Protection", "as_json", "summary_lines"]


@dataclass(frozen=True)
class Protection:
    key: str  # stable id, e.g. "memory_cgroup"
    title: str  # what it protects, for people
    available: bool
    detail: str  # how it is enforced, or why it is missing and the fallback


def as_json(protections: list[Protection]) -> list[dict]:
    """[{"key", "title", "available", "detail"}, ...] in a fixed order (for results.json)."""
    return [asdict(p) for p in protections]


def summary_lines(protections: list[Protection]) -> list[str]:
    """One line with the count, then one line per missing protection."""
    missing = [p for p in protections if not p.available]
    lines = [
        f"protections: {len(protections) - len(missing)} of {len(protections)} in force"
        + (f"; MISSING: {', '.join(p.title for p in missing)}" if missing else "")
    ]
    lines += [f"  missing {p.title}: {p.detail}" for p in missing]
    return lines
