"""Trusted notebook handling: read the source, read a submission, build the graded notebook.

Everything here runs in the grader process, never in the student's kernel, and
never trusts the student's cell metadata beyond using it to *find* answer cells:
test cells, locked cells, markdown, points and grade ids all come from the
source (solution) notebook.

Threat model: a submission is any bytes. Whatever they are — not UTF-8,
invalid or deeply nested JSON (RecursionError), numbers too long to convert,
a parse bomb (millions of tiny values such as `{}`, each a Python object of
hundreds of bytes once parsed, three times over: a 24 MiB file took the
grader's worker, root and unconfined, to 4.8 GiB), which `json_values` counts
in the bytes, in bounded time and memory, before anything is parsed,
lone surrogate escapes, wrong types anywhere in the nbformat structure —
`parse_submission` raises `UnreadableNotebook` with a reason (the worker turns
any other exception of reading or merging into an `unreadable` row too).
Student text is used as cell *source* only, never as metadata; nbgrader's
region markers (`BEGIN HIDDEN TESTS`, `BEGIN SOLUTION`, ...) in it are
defused, so nbgrader's preprocessors (feedback, formgrader) never see a
region the instructor did not write; a student may add at most
`max_added_cells` cells (the rest are dropped and counted).
"""

from __future__ import annotations

import copy
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from courseinfo.nbgrader_metadata import nbgrader_cell

from ..limits import MAX_ADDED_CELLS, MAX_NOTEBOOK_BYTES, MAX_NOTEBOOK_VALUES

__all__ = [
    "SourceNotebook",
    "TestCell",
    "UnreadableNotebook",
    "read_submission",
    "parse_submission",
    "json_values",
    "build_graded",
    "shared_cache_run",
    "cell_source",
]

# nbgrader's region markers (matched anywhere in a line, as nbgrader does), and what they become in student text
_MARKERS = re.compile(r"(BEGIN|END) (HIDDEN TESTS|SOLUTION|MARK SCHEME)")
_CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
# A JSON string (an unterminated one runs to the end, so a scan never restarts inside it: linear time), or
# a character after which a value or a key begins (not `[]` or `{}`: nothing begins there).
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)|[\[{,:](?![ \t\r\n]*[\]}])', re.DOTALL)
_STARTS = tuple(map(ord, "[{,:"))


class UnreadableNotebook(Exception):
    """The submitted file is not a notebook we can read (the message says why)."""


def cell_source(cell) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(src, list):
        return "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


@dataclass(frozen=True)
class TestCell:
    grade_id: str
    points: float
    index: int  # position in the source notebook


@dataclass
class SourceNotebook:
    """One assignment's source notebook (the reference solution, with hidden tests)."""

    assignment: str
    path: Path
    nb: NotebookNode
    raw: bytes
    test_cells: list[TestCell] = field(default_factory=list)
    answer_ids: list[str] = field(default_factory=list)
    stubs: dict[str, str] = field(default_factory=dict)  # answer grade_id -> released stub source
    editions: dict[str, NotebookNode] = field(default_factory=dict)  # language -> the same notebook in it
    edition_problems: dict[str, str] = field(default_factory=dict)  # language -> why its edition is not used

    @property
    def notebook_name(self) -> str:
        """The notebook's file stem, e.g. 02_scaled_sum (nbgrader's notebook id)."""
        return self.path.stem

    @property
    def file_name(self) -> str:
        return self.path.name

    @property
    def max_score(self) -> float:
        return float(sum(t.points for t in self.test_cells))

    @classmethod
    def load(cls, assignment: str, path: Path) -> SourceNotebook:
        raw = Path(path).read_bytes()
        nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
        src = cls(assignment=assignment, path=Path(path), nb=nb, raw=raw)
        seen: set[str] = set()
        for i, cell in enumerate(nb.cells):
            gid = nbgrader_cell(cell).grade_id
            if gid is None:
                continue
            if gid in seen:
                raise ValueError(f"{path}: grade_id {gid!r} is used by more than one cell")
            seen.add(gid)
            if nbgrader_cell(cell).is_test:
                if cell.cell_type != "code":
                    raise ValueError(f"{path}: graded cell {gid!r} is not a code cell")
                points = nbgrader_cell(cell).points
                src.test_cells.append(TestCell(gid, points, i))
            elif nbgrader_cell(cell).solution:
                src.answer_ids.append(gid)
        src.stubs = _release_stubs(nb)
        return src

    def cell_index(self) -> tuple[dict[str, int], dict[str, int]]:
        """(grade_id -> index, cell id -> index) of the source cells."""
        by_gid, by_id = {}, {}
        for i, cell in enumerate(self.nb.cells):
            gid = nbgrader_cell(cell).grade_id
            if gid:
                by_gid[gid] = i
            cid = cell.get("id")
            if isinstance(cid, str) and cid:
                by_id[cid] = i
        return by_gid, by_id

    def test_ids(self) -> list[str]:
        return [t.grade_id for t in self.test_cells]


def shared_cache_run(source: SourceNotebook) -> NotebookNode:
    """The notebook whose compiled programs student kernels may share (sandbox/xla_cache.py): the release
    exactly as students get it, made by nbgrader's own preprocessors (each answer its stub, each test cell
    its visible part). Nothing in it is the solution's or a hidden test's, so a cache hit tells a kernel
    nothing a student cannot read; the visible checks' own programs, the same for every answer, are there."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions

    nb = copy.deepcopy(source.nb)
    for pre in (ClearSolutions(), ClearHiddenTests(), ClearOutput()):
        nb, _ = pre.preprocess(nb, {})
    return nb


def _release_stubs(nb: NotebookNode) -> dict[str, str]:
    """What the student release holds in each answer cell (nbgrader's ClearSolutions)."""
    from nbgrader.preprocessors import ClearSolutions

    released = copy.deepcopy(nb)
    released, _ = ClearSolutions().preprocess(released, {})
    answers = [(nbgrader_cell(c), c) for c in released.cells]
    return {meta.grade_id: cell_source(c) for meta, c in answers if meta.solution and meta.grade_id}


# ---------------------------------------------------------------- submissions
def json_values(data: bytes, limit: int) -> int:
    """How many values and keys the JSON text `data` holds, counted without parsing it (one per place
    where a value or key begins); the count stops at `limit` + 1. Time linear in `data` (and at most
    about 2 × `limit` steps of Python), memory constant. For text that is not JSON, a number all the same."""
    count = 1
    for token in _TOKEN.finditer(data):
        if token.end() - token.start() == 1 and data[token.start()] in _STARTS:
            count += 1
            if count > limit:
                break
    return count


def parse_submission(data: bytes) -> NotebookNode:
    """Parse a submitted file's bytes as a notebook, or raise UnreadableNotebook."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise UnreadableNotebook(
            f"file is too large ({len(data) // 2**20} MiB; the limit is {MAX_NOTEBOOK_BYTES // 2**20} MiB)"
        )
    if json_values(data, MAX_NOTEBOOK_VALUES) > MAX_NOTEBOOK_VALUES:
        raise UnreadableNotebook(
            f"the notebook is too complex to read: more than {MAX_NOTEBOOK_VALUES:,} JSON values "
            "(the limit; clear the outputs and hand it in again)"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableNotebook("not a notebook: the file is not UTF-8 text") from None
    try:
        obj = json.loads(text)
    except RecursionError:
        raise UnreadableNotebook("not a notebook: the JSON is nested too deeply") from None
    except ValueError as err:
        raise UnreadableNotebook(f"not a notebook: invalid JSON ({_short(err)})") from None
    except Exception as err:  # noqa: BLE001 - anything else the decoder does with hostile bytes
        raise UnreadableNotebook(f"not a notebook: invalid JSON ({type(err).__name__})") from None
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise UnreadableNotebook("not a notebook: it contains invalid Unicode (a lone surrogate escape)") from None
    except (RecursionError, ValueError, TypeError):
        raise UnreadableNotebook("not a notebook: the JSON is nested too deeply") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("cells", obj.get("worksheets")), list):
        raise UnreadableNotebook("not a notebook: the JSON has no list of cells")
    quiet = logging.getLogger("traitlets")  # nbformat logs "Notebook JSON is invalid" there: the checks below
    was, quiet.disabled = quiet.disabled, True  # say what matters; silenced for this call only
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as err:  # noqa: BLE001 - any failure means "unreadable", with the reason
        raise UnreadableNotebook(f"not a readable notebook ({_short(err)})") from None
    finally:
        quiet.disabled = was
    cells = nb.get("cells")
    if not isinstance(cells, list):
        raise UnreadableNotebook("not a notebook: no cells")
    return nb


def read_submission(path: Path) -> NotebookNode:
    """Read a submitted file (not through a symlink; at most MAX_NOTEBOOK_BYTES) and parse it."""
    import os
    import stat as stat_

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise UnreadableNotebook(f"cannot read the file ({err.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        try:
            st = os.fstat(fh.fileno())
            if not stat_.S_ISREG(st.st_mode):
                raise UnreadableNotebook("not a regular file")
            if st.st_size > MAX_NOTEBOOK_BYTES:
                raise UnreadableNotebook(
                    f"file is too large ({st.st_size // 2**20} MiB; the limit is {MAX_NOTEBOOK_BYTES // 2**20} MiB)"
                )
            data = fh.read(MAX_NOTEBOOK_BYTES + 1)
        except OSError as err:
            raise UnreadableNotebook(f"cannot read the file ({err.strerror})") from None
    return parse_submission(data)


def defuse_markers(text: str) -> str:
    """Student text with nbgrader's region markers broken up (`BEGIN HIDDEN TESTS` -> `BEGIN HIDDEN_TESTS`)."""
    return _MARKERS.sub(
        lambda m: f"{m.group(1)} {m.group(2).replace(' ', '_')}" if " " in m.group(2) else f"{m.group(1)}_{m.group(2)}",
        text,
    )


def _short(err: Exception, n: int = 120) -> str:
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return text[:n]


# ---------------------------------------------------------------- merging
@dataclass
class MergeReport:
    answers_found: list[str] = field(default_factory=list)
    answers_missing: list[str] = field(default_factory=list)
    added_cells: int = 0
    dropped_cells: int = 0  # added cells beyond max_added_cells (not run, not kept)
    duplicates: int = 0  # further student copies of a source cell (ignored)


def build_graded(
    source: SourceNotebook, student: NotebookNode | None, max_added_cells: int = MAX_ADDED_CELLS, language: str = "en"
) -> tuple[NotebookNode, MergeReport]:
    """The notebook that is executed and graded for one submission.

    Starts from the source's cells. Each answer cell (nbgrader solution cell)
    takes the student's cell with the same grade_id (the first one, if
    duplicated; falling back to the same cell id if the student's metadata was
    lost), or the released stub if there is none. Test cells, locked cells,
    markdown and plain example cells are the source's. Code and markdown cells
    the student added (no known grade_id or cell id) are kept after the source
    cell they followed, never before the locked set-up cells; at most
    `max_added_cells` of them (the first ones), the rest are dropped and counted.
    `language`: the source's cells come from that edition (`source.editions`, checked to have the
    same cells and code as the source by discovery), so the prose is the student's; else English.
    """
    report = MergeReport()
    by_gid, _ = source.cell_index()
    base = source.editions.get(language, source.nb)
    answer_index = {by_gid[g]: g for g in source.answer_ids}
    chosen, added = _match_student_cells(source, base.cells, student, max_added_cells, report)
    out = new_notebook(metadata=copy.deepcopy(base.metadata))
    used_ids: set[str] = {c.get("id") for c in base.cells if c.get("id")}
    out.cells += _added_cells(added.get(-1, []), used_ids)
    for i, src in enumerate(base.cells):
        cell = copy.deepcopy(src)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        gid = answer_index.get(i)
        if gid is not None:
            if gid in chosen:
                cell.source = defuse_markers(cell_source(chosen[gid]))
                report.answers_found.append(gid)
            else:
                cell.source = source.stubs.get(gid, "raise NotImplementedError()")
                report.answers_missing.append(gid)
        out.cells.append(cell)
        out.cells += _added_cells(added.get(i, []), used_ids)
    return out, report


def _match_student_cells(
    source: SourceNotebook, src_cells: list, student: NotebookNode | None, max_added_cells: int, report: MergeReport
) -> tuple[dict[str, dict], dict[int, list[dict]]]:
    """The student's answer for each answer cell (grade id -> their cell), and the cells they added, by the
    index of the source cell they follow (-1: before the first; never before the locked set-up cells)."""
    by_gid, by_id = source.cell_index()
    answer_index = {by_gid[g]: g for g in source.answer_ids}
    first_graded = min([by_gid[g] for g in source.answer_ids] + [t.index for t in source.test_cells] + [len(src_cells)])
    floor = -1
    for i in range(first_graded):
        if src_cells[i].cell_type == "code" and nbgrader_cell(src_cells[i]).locked:
            floor = i
    chosen: dict[str, dict] = {}
    added: dict[int, list[dict]] = {}
    seen: set[int] = set()
    anchor = -1
    for cell in student.cells if student is not None else []:
        if not isinstance(cell, dict):  # a malformed entry: ignored
            continue
        ctype = cell.get("cell_type")
        gid = nbgrader_cell(cell).grade_id
        cid = cell.get("id") if isinstance(cell.get("id"), str) else None
        idx = by_gid.get(gid) if gid else None
        if idx is None and cid is not None:
            idx = by_id.get(cid)
        if idx is not None:
            anchor = idx
            if idx in seen:
                report.duplicates += 1
                continue
            seen.add(idx)
            ans = answer_index.get(idx)
            if ans is not None and ctype == src_cells[idx].cell_type:
                chosen[ans] = cell
            continue
        if ctype in ("code", "markdown"):
            if report.added_cells >= max_added_cells:
                report.dropped_cells += 1
                continue
            added.setdefault(max(anchor, floor), []).append(cell)
            report.added_cells += 1
        # any other cell a student added (raw, unknown types) is ignored
    return chosen, added


def _added_cells(cells: list[dict], used_ids: set[str]) -> list:
    """The student's added cells as fresh cells of the graded notebook: their text defused, marked
    `student_added`, each with a valid id no other cell has (`used_ids` grows)."""
    made = []
    for cell in cells:
        text = defuse_markers(cell_source(cell))
        new = new_code_cell(text) if cell.get("cell_type") == "code" else new_markdown_cell(text)
        cid = cell.get("id")
        if not (isinstance(cid, str) and _CELL_ID.fullmatch(cid) and cid not in used_ids):
            n = len(used_ids)
            while f"student-added-{n}" in used_ids:
                n += 1
            cid = f"student-added-{n}"
        new.id = cid
        used_ids.add(new.id)
        new.metadata = {"autograder": {"student_added": True}}
        made.append(new)
    return made
