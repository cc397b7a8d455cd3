"""Which hand-ins are unusually alike, exercise by exercise: OUT/similarity.html and similarity.json.

It reports; it never changes a score. Per answer cell (an nbgrader solution cell of the source), every
student's code becomes a fingerprint set by winnowing (Schleimer, Wilkerson and Aiken, "Winnowing:
local algorithms for document fingerprinting", SIGMOD 2003, the method behind MOSS):

1. **Tokens, normalized** (Python's `tokenize`; a cell that does not tokenize is split on words and
   symbols): comments, blank lines and indentation are dropped; numbers become `N` and strings `S`;
   a name becomes `V` unless the course gives it (an import or a top-level name of the source's other
   code cells, such as `lax`, `jnp` or `DEVICES`), it is a keyword or a built-in, or it follows a dot. So
   renaming variables and re-commenting change nothing, while `lax.pmean` stays unlike `lax.psum`.
2. **k-grams** of `K` tokens, hashed (BLAKE2b), and in every window of `W` hashes the smallest kept:
   any shared run of at least `K + W - 1` tokens shares a fingerprint.
3. **What everyone writes is not evidence**: fingerprints of the released stub, of the course's own
   code (the source's other cells), and of the reference solution are removed, and so is any
   fingerprint that at least `COMMON_SHARE` of the class's answers (and at least 3 of them) contain.
4. A pair's **similarity** is the share of the smaller answer's remaining fingerprints that the other
   has too. Pairs at or above `SHOWN_AT` are listed, highest first, with both answers side by side.
   An answer with fewer than `MIN_FINGERPRINTS` left is too short to tell copying from the one way
   of being right (a one-line `lax.psum(x, DEVICES)` is written alike by everybody): it is counted,
   never paired.

A batch of some assignments (`--assignment`) rewrites their sections and keeps the others' from the
last similarity.json, which stores the answers it shows; a batch of some students writes nothing (a
pair needs the whole class).

Threat model: the answers are student text. Each is read through `read_submission` (bounded, no link
followed), cut at `SIMILARITY_ANSWER_CHARS`, and shown only as escaped text in a page with the grader's CSP
(`inert`); a class of n answers costs an inverted index over fingerprints, not n² comparisons of text.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import io
import json
import keyword
import re
import tokenize
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from courseinfo.nbgrader_metadata import nbgrader_cell

from ..course.notebooks import SourceNotebook, UnreadableNotebook, cell_source, read_submission
from ..intake.placement import Intake
from ..limits import SIMILARITY_ANSWER_CHARS, SIMILARITY_KEPT_BYTES, SIMILARITY_PAIRS_SHOWN
from .inert import CSP_META, html_text
from .outputs import atomic_write

__all__ = ["Pair", "ExerciseSimilarity", "fingerprints", "compare", "similarity", "write_similarity"]

K, W = 5, 4
COMMON_SHARE = 0.3
MIN_FINGERPRINTS = 6
SHOWN_AT = 0.6
_WORDS = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?|\S")


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    score: float  # the share of the smaller answer's fingerprints the other has
    shared: int


@dataclass(frozen=True)
class ExerciseSimilarity:
    assignment: str
    grade_id: str
    answers: int  # students whose answer cell was read
    too_short: int  # answers with fewer than MIN_FINGERPRINTS distinctive fingerprints left
    pairs: tuple[Pair, ...]  # at or above SHOWN_AT, highest first


def _raw_tokens(code: str) -> list[tuple[int, str]]:
    try:
        return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(code).readline)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [(tokenize.OP, w) for w in _WORDS.findall(code)]


def _module_names(code: str) -> set[str]:
    """The names a code cell gives the notebook: its imports, and what it defines or assigns at top level."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def vocabulary(source: SourceNotebook) -> set[str]:
    """The names an answer may use from the course (what the source's other code cells import, define or
    assign at top level, such as `lax`, `p_update_step` or `DEVICES`), keywords and built-ins; any other
    name is the student's own."""
    names = set(keyword.kwlist) | set(dir(builtins))
    for cell in source.nb.cells:
        if cell.cell_type == "code" and not nbgrader_cell(cell).solution:
            names |= _module_names(cell_source(cell))
    return names


def normalized(code: str, known: set[str]) -> list[str]:
    """The code's tokens, with comments and layout dropped and the student's own names made alike."""
    out: list[str] = []
    after_dot = False
    for kind, text in _raw_tokens(code[:SIMILARITY_ANSWER_CHARS]):
        if kind in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        if kind == tokenize.NEWLINE:
            token = ";"
        elif kind == tokenize.NUMBER or (kind == tokenize.OP and text[:1].isdigit()):
            token = "N"
        elif kind == tokenize.STRING:
            token = "S"
        elif kind == tokenize.NAME or (kind == tokenize.OP and (text[:1].isalpha() or text[:1] == "_")):
            token = text if (after_dot or text in known) else "V"
        else:
            token = text
        out.append(token)
        after_dot = text == "."
    return out


def fingerprints(tokens: list[str]) -> set[int]:
    """Winnowing: the smallest hash of every window of W consecutive K-gram hashes."""
    grams = [
        int.from_bytes(hashlib.blake2b("\x1f".join(tokens[i : i + K]).encode(), digest_size=8).digest(), "big")
        for i in range(len(tokens) - K + 1)
    ]
    if len(grams) <= W:
        return set(grams)
    return {min(grams[i : i + W]) for i in range(len(grams) - W + 1)}


def compare(answers: dict[str, str], ignored: set[int], known: set[str]) -> tuple[list[Pair], int]:
    """(pairs at or above SHOWN_AT, highest first; how many answers were too short to pair)."""
    prints = {s: fingerprints(normalized(code, known)) - ignored for s, code in answers.items()}
    holders: dict[int, list[str]] = defaultdict(list)
    for student, fps in prints.items():
        for fp in fps:
            holders[fp].append(student)
    common = max(3, COMMON_SHARE * len(prints))
    prints = {s: {fp for fp in fps if len(holders[fp]) < common} for s, fps in prints.items()}
    short = {s for s, fps in prints.items() if len(fps) < MIN_FINGERPRINTS}
    shared: dict[tuple[str, str], int] = defaultdict(int)
    for students in holders.values():
        if len(students) >= common:
            continue
        kept = sorted(s for s in students if s not in short)
        for i, a in enumerate(kept):
            for b in kept[i + 1 :]:
                shared[(a, b)] += 1
    pairs = [
        Pair(a, b, round(n / min(len(prints[a]), len(prints[b])), 3), n)
        for (a, b), n in shared.items()
        if n / min(len(prints[a]), len(prints[b])) >= SHOWN_AT
    ]
    pairs.sort(key=lambda p: (-p.score, -p.shared, p.a, p.b))
    return pairs, len(short)


def _answers(intake: Intake, source: SourceNotebook) -> dict[str, dict[str, str]]:
    """grade_id -> student -> their answer cell's code (the first cell carrying that answer's grade_id)."""
    by_exercise: dict[str, dict[str, str]] = {gid: {} for gid in source.answer_ids}
    for (student, aid), placed in intake.placed.items():
        if aid != source.assignment:
            continue
        try:
            nb = read_submission(placed.path)
        except UnreadableNotebook:
            continue
        for cell in nb.cells:
            gid = nbgrader_cell(cell).grade_id
            if cell.get("cell_type") == "code" and gid in by_exercise and student not in by_exercise[gid]:
                by_exercise[gid][student] = cell_source(cell)[:SIMILARITY_ANSWER_CHARS]
    return by_exercise


def similarity(intake: Intake, source: SourceNotebook) -> tuple[list[ExerciseSimilarity], dict]:
    """Every answer cell of one assignment compared across the class; also the answers shown (for the page)."""
    known = vocabulary(source)
    by_gid, _ = source.cell_index()
    course_code = [cell_source(c) for c in source.nb.cells if c.cell_type == "code"]
    results, shown = [], {}
    for gid, answers in _answers(intake, source).items():
        reference = cell_source(source.nb.cells[by_gid[gid]])
        ignored = set().union(
            *(fingerprints(normalized(code, known)) for code in [*course_code, source.stubs.get(gid, ""), reference])
        )
        pairs, short = compare(answers, ignored, known)
        results.append(ExerciseSimilarity(source.assignment, gid, len(answers), short, tuple(pairs)))
        shown[(source.assignment, gid)] = {s: answers[s] for p in pairs[:SIMILARITY_PAIRS_SHOWN] for s in (p.a, p.b)}
    return results, shown


def _page(results: list[ExerciseSimilarity], shown: dict) -> str:
    e = html_text
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        CSP_META,
        "<title>Similar hand-ins</title><style>body{font-family:sans-serif;margin:2em;max-width:80em}"
        "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.3em .6em;vertical-align:top}"
        "pre{white-space:pre-wrap;margin:0;font-size:90%}.muted{color:#555}</style></head><body>",
        "<h1>Similar hand-ins</h1>",
        '<p class="muted">Answers compared exercise by exercise by winnowing (the method behind MOSS), after '
        "dropping comments and layout, making the students' own names alike, and removing what the released "
        "notebook, the reference solution and at least 30 % of the class write alike. A high similarity is a "
        "reason to read both answers, not a finding: short exercises have few ways to be right. Scores are not "
        "changed by this page.</p>",
    ]
    for r in results:
        parts.append(f'<h2 id="{e(r.assignment)}-{e(r.grade_id)}">{e(r.assignment)}: <code>{e(r.grade_id)}</code></h2>')
        parts.append(
            f'<p class="muted">{r.answers} answer(s) read; {r.too_short} too short to compare; '
            f"{len(r.pairs)} pair(s) at or above {SHOWN_AT:.0%}.</p>"
        )
        for p in r.pairs[:SIMILARITY_PAIRS_SHOWN]:
            code = shown[(r.assignment, r.grade_id)]
            parts.append(
                f"<h3>{e(p.a)} &amp; {e(p.b)}: {p.score:.0%} ({p.shared} shared fingerprints)</h3>"
                f"<table><tr><th>{e(p.a)}</th><th>{e(p.b)}</th></tr><tr>"
                f"<td><pre>{e(code[p.a])}</pre></td><td><pre>{e(code[p.b])}</pre></td></tr></table>"
            )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _as_json(results: list[ExerciseSimilarity], shown: dict) -> list[dict]:
    return [
        {**asdict(r), "pairs": [asdict(p) for p in r.pairs], "shown": shown[(r.assignment, r.grade_id)]}
        for r in results
    ]


def _kept(out: Path, graded: set[str]) -> tuple[list[ExerciseSimilarity], dict]:
    """The last similarity.json's exercises of the assignments not graded now (none when it is missing, too
    large or not what this module writes: then those sections are simply redone by the next whole batch)."""
    path = out / "similarity.json"
    try:
        if path.is_symlink() or path.stat().st_size > SIMILARITY_KEPT_BYTES:
            return [], {}
        data = json.loads(path.read_text(encoding="utf-8"))
        results, shown = [], {}
        for d in data:
            if d["assignment"] in graded:
                continue
            pairs = tuple(Pair(str(p["a"]), str(p["b"]), float(p["score"]), int(p["shared"])) for p in d["pairs"])
            r = ExerciseSimilarity(
                str(d["assignment"]), str(d["grade_id"]), int(d["answers"]), int(d["too_short"]), pairs
            )
            code = {str(k): str(v) for k, v in d["shown"].items()}
            if not all(s in code for p in pairs[:SIMILARITY_PAIRS_SHOWN] for s in (p.a, p.b)):
                return [], {}
            results.append(r)
            shown[(r.assignment, r.grade_id)] = code
        return results, shown
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return [], {}


def write_similarity(out: Path, sources: dict[str, SourceNotebook], intake: Intake) -> Path:
    """OUT/similarity.html and OUT/similarity.json for the assignments of this batch, the others kept."""
    results, shown = _kept(out, set(sources))
    for source in sources.values():
        found, answers = similarity(intake, source)
        results += found
        shown.update(answers)
    results.sort(key=lambda r: r.assignment)  # stable: each assignment's exercises stay in notebook order
    atomic_write(out / "similarity.json", json.dumps(_as_json(results, shown), indent=1, ensure_ascii=False) + "\n")
    atomic_write(out / "similarity.html", _page(results, shown))
    return out / "similarity.html"
