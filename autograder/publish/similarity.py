"""Which hand-ins are unusually alike, exercise by exercise: OUT/similarity.html and similarity.json.

It reports; it never changes a score. Per answer cell (an nbgrader solution cell of the source), every
student's code is compared with every other student's in three steps:

1. **The program, not its spelling** (canonical.py; Python's `ast`, nothing executed): comments, layout,
   parentheses, docstrings and annotations are gone; one spelling for what is written several ways
   (`jax.lax.f`/`lax.f`, `a.sum()`/`jnp.sum(a)`, `for`/`while`, a temporary or not, `b + a`/`a + b`);
   padding (debugging prints, idle stores, `pass`) and only what provably never runs are removed (a
   `while 0:`'s `else:` runs and stays; a function reachable through `globals()`, a decorator or
   `getattr` stays); the student's own names become `V`, numbers `N`, strings `S`.
2. **Every run of `K` tokens** is hashed (BLAKE2b); an answer is the set of its k-grams. Winnowing (the
   MOSS way of keeping a fingerprint database small) would throw evidence away, and an answer is bounded
   (`SIMILARITY_ANSWER_CHARS`), so every k-gram is kept: any shared run of `K` tokens counts.
3. **What everyone writes is not evidence**: the k-grams of the released stub, of the reference solution
   and of the notebook's other code cells (its demonstrations, which students adapt) are removed, and so
   are the class's **common ways** (`common_ways`): a program that `COMMON_WAY` or more students hand in
   alike (a natural class of plain loops writes a few such programs: issue 58) is named as a common way to
   write it, with its size and its students, and its k-grams are not evidence for any other pair. An
   answer with fewer than `MIN_KGRAMS` left is too short to tell copying from the one way of being right
   (a one-line `lax.psum(x, DEVICES)`, or the reference's way word for word): it is counted, never paired.
   A ring of three copies in a class of ten keeps its evidence.

A pair's **score** is the share of the shorter answer that the other contains (the larger of the two
shares: of A's distinctive k-grams that B has, and of B's that A has), on at least `MIN_KGRAMS` shared
k-grams: lines a copier adds to a copy cannot dilute it (issue 58: five debugging lines hid 70 of 74
copies from the old score, the smaller share). The page shows both shares, so it is plain which answer
contains which. Pairs at or above `SHOWN_AT` are listed, highest first, with both answers side by side
(similarity.json keeps the highest `SIMILARITY_PAIRS_KEPT` and counts the others); three or more
students linked by listed pairs are named as a group. Chosen by measurement on the fixture classes of
tests/helpers/similarity_specs.py and the copier's edits of tests/helpers/similarity_edits.py against
the old report, Dolos and copydetect (docs/instructors.md gives the figures).

A batch of some assignments (`--assignment`) rewrites their sections and keeps the others' from the
last similarity.json, which stores the answers it shows; a batch of some students writes nothing (a
pair needs the whole class).

Threat model: the answers are student text. Each is read through `read_submission` (bounded, no link
followed), cut at `SIMILARITY_ANSWER_CHARS`, parsed by `ast.parse` only (never compiled or run; a tree
too deep for the parser or for the rewriting, which stops at `_MAX_DEPTH`, falls back to tokens), and
shown only as escaped text in a page with the grader's CSP (`inert`). A class of n answers costs n
parses and at most n²/2 intersections of bounded sets: 500 answers to notebook 04's `train` took 0.7 s of
CPU, 300 distinct answers of the full `SIMILARITY_ANSWER_CHARS` each 33 s (issue 58, on this project's
2-core machine).
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import keyword
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import NamedTuple

from courseinfo.nbgrader_metadata import nbgrader_cell

from ..course.notebooks import SourceNotebook, UnreadableNotebook, cell_source, read_submission
from ..intake.placement import Intake
from ..limits import SIMILARITY_ANSWER_CHARS, SIMILARITY_KEPT_BYTES, SIMILARITY_PAIRS_KEPT, SIMILARITY_PAIRS_SHOWN
from .canonical import canonical_tokens, parse
from .inert import CSP_META, html_text
from .outputs import atomic_write

__all__ = [
    "Pair",
    "ExerciseSimilarity",
    "canonical_tokens",
    "kgrams",
    "common_kgrams",
    "compare_answers",
    "common_ways",
    "Comparison",
    "compare_class",
    "similarity",
    "write_similarity",
]

K = 8  # tokens per k-gram
MIN_KGRAMS = 20  # distinctive k-grams an answer needs to be paired (one line of code has about 15)
SHOWN_AT = 0.85  # the pair's score from which it is listed
COMMON_WAY = 4  # students handing in one program from which it is a common way to write it, not a copy


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    score: float  # the smaller of a_share and b_share
    shared: int  # distinctive k-grams both answers have
    a_share: float  # the share of a's distinctive k-grams that b's answer has
    b_share: float  # the share of b's distinctive k-grams that a's answer has


@dataclass(frozen=True)
class ExerciseSimilarity:
    assignment: str
    grade_id: str
    answers: int  # students whose answer cell was read
    too_short: int  # answers with fewer than MIN_KGRAMS distinctive k-grams left
    listed: int  # pairs at or above SHOWN_AT
    pairs: tuple[Pair, ...]  # the highest SIMILARITY_PAIRS_KEPT of them, highest first
    groups: tuple[tuple[str, ...], ...]  # three or more students linked by listed pairs
    ways: tuple[tuple[str, ...], ...] = ()  # common ways to write it: COMMON_WAY or more students, one program


def kgrams(tokens: list[str]) -> set[int]:
    """Every run of K consecutive tokens, hashed."""
    return {
        int.from_bytes(hashlib.blake2b("\x1f".join(tokens[i : i + K]).encode(), digest_size=8).digest(), "big")
        for i in range(len(tokens) - K + 1)
    }


def _module_names(code: str) -> set[str]:
    """The names a code cell gives the notebook: its imports, and what it defines or assigns at top level."""
    try:
        tree = parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
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


def _groups(pairs: list[Pair]) -> tuple[tuple[str, ...], ...]:
    """Three or more students linked by listed pairs (the connected parts of the pairs' graph)."""
    parent: dict[str, str] = {}

    def root(s: str) -> str:
        while parent.setdefault(s, s) != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for p in pairs:
        parent[root(p.a)] = root(p.b)
    members: dict[str, list[str]] = {}
    for s in parent:
        members.setdefault(root(s), []).append(s)
    return tuple(sorted(tuple(sorted(m)) for m in members.values() if len(m) >= 3))


def common_kgrams(base: list[str], known: set[str]) -> set[int]:
    """The k-grams of code every student may write (the stub, the reference, the notebook's other cells),
    each cell read twice: the names it binds as the student's own (`V`), and as the course's names (a cell
    that defines `to_next` and one that uses it both teach the same line)."""
    grams: set[int] = set()
    for code in base:
        for bound_own in (True, False):
            grams |= kgrams(canonical_tokens(code, known, _module_names(code), bound_own))
    return grams


class Comparison(NamedTuple):
    pairs: list[Pair]  # at or above SHOWN_AT, highest first
    too_short: int  # answers with fewer than MIN_KGRAMS distinctive k-grams left (common ways' members aside)
    ways: tuple[tuple[str, ...], ...]  # the class's common ways: COMMON_WAY or more students with one program


def common_ways(prints: dict[str, set[int]]) -> tuple[tuple[str, ...], ...]:
    """The students of each program that COMMON_WAY or more hand in alike (their distinctive k-grams equal)."""
    alike: dict[frozenset[int], list[str]] = {}
    for student, grams in prints.items():
        if len(grams) >= MIN_KGRAMS:
            alike.setdefault(frozenset(grams), []).append(student)
    return tuple(sorted(tuple(sorted(g)) for g in alike.values() if len(g) >= COMMON_WAY))


def compare_answers(
    answers: dict[str, str], ignored: set[int], known: set[str], keep: set[str] = frozenset()
) -> Comparison:
    """The answers' listed pairs, how many were too short to pair, and the class's common ways. `ignored`: the
    k-grams of what everyone may write (`common_kgrams`); `keep`: the names the stub defines. A common way's
    k-grams are not evidence either: only what is rarer than the class's common ways is called similar."""
    prints = {s: kgrams(canonical_tokens(code, known, keep)) - ignored for s, code in answers.items()}
    ways = common_ways(prints)
    usual = set().union(*(prints[way[0]] for way in ways))
    members = {s for way in ways for s in way}
    prints = {s: grams - usual for s, grams in prints.items() if s not in members}
    paired = sorted(s for s, grams in prints.items() if len(grams) >= MIN_KGRAMS)
    pairs = []
    for a, b in combinations(paired, 2):
        shared = len(prints[a] & prints[b])
        a_share, b_share = shared / len(prints[a]), shared / len(prints[b])
        # the shorter answer's share (how much of it the other contains), on as much evidence as one answer needs
        if max(a_share, b_share) >= SHOWN_AT and shared >= MIN_KGRAMS:
            pairs.append(Pair(a, b, round(max(a_share, b_share), 3), shared, round(a_share, 3), round(b_share, 3)))
    pairs.sort(key=lambda p: (-p.score, -p.shared, p.a, p.b))
    return Comparison(pairs, len(prints) - len(paired), ways)


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


def compare_class(source: SourceNotebook, by_gid: dict[str, dict[str, str]]) -> tuple[list[ExerciseSimilarity], dict]:
    """Each answer cell's answers (grade_id -> student -> code) compared across the class; also the answers
    the page shows. What everyone may write: the stub of that cell and every code cell of the source."""
    known = vocabulary(source)
    course = common_kgrams([cell_source(c) for c in source.nb.cells if c.cell_type == "code"], known)
    results, shown = [], {}
    for gid, answers in by_gid.items():
        stub = source.stubs.get(gid, "")
        pairs, short, ways = compare_answers(answers, course | common_kgrams([stub], known), known, _module_names(stub))
        kept = tuple(pairs[:SIMILARITY_PAIRS_KEPT])
        counts = (len(answers), short, len(pairs))
        results.append(ExerciseSimilarity(source.assignment, gid, *counts, kept, _groups(pairs), ways))
        shown[(source.assignment, gid)] = {s: answers[s] for p in pairs[:SIMILARITY_PAIRS_SHOWN] for s in (p.a, p.b)}
    return results, shown


def similarity(intake: Intake, source: SourceNotebook) -> tuple[list[ExerciseSimilarity], dict]:
    """Every answer cell of one assignment compared across the class; also the answers shown (for the page)."""
    return compare_class(source, _answers(intake, source))


# ---------------------------------------------------------------- the page and the file
def _both(en: str, zh: str) -> str:
    return f'{en} <span lang="zh-CN">/ {zh}</span>'


def _page(results: list[ExerciseSimilarity], shown: dict) -> str:
    e = html_text
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        CSP_META,
        "<title>Similar hand-ins</title><style>body{font-family:sans-serif;margin:2em;max-width:80em}"
        "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.3em .6em;vertical-align:top}"
        "pre{white-space:pre-wrap;margin:0;font-size:90%}.muted{color:#555}</style></head><body>",
        f"<h1>{_both('Similar hand-ins', '相似的提交')}</h1>",
        '<p class="muted">Answers compared exercise by exercise as programs: parsed, with comments, layout, '
        "redundant parentheses, no-op arithmetic (<code>+ 0</code>, <code>* 1</code>), debugging prints, idle lines "
        "and code that never runs removed, one spelling for what can be written several ways (<code>a.sum()</code> "
        "and <code>jnp.sum(a)</code>, a loop as <code>for</code> or <code>while</code>, a temporary or not), and the "
        f"students' own names made alike; then every run of {K} tokens compared. What the released notebook and "
        "the reference solution contain is not evidence and is removed first, and so is a common way to write it: "
        f"a program {COMMON_WAY} or more students hand in alike is named as such, not as a copy. A pair's score is "
        "the share of the shorter answer that the other contains, so lines added to a copy do not hide it; both "
        "shares are shown. A high score is a reason to read both answers, not a finding. Scores are not changed by "
        "this page.<br>"
        '<span lang="zh-CN">按练习逐题把答案当作程序比较：先解析代码，去掉注释、排版、多余的括号、无作用的运算'
        "（<code>+ 0</code>、<code>* 1</code>）、调试输出、空转的语句和永远不会执行的代码，把同一程序的不同写法统一"
        "（<code>a.sum()</code> 与 <code>jnp.sum(a)</code>、<code>for</code> 与 <code>while</code> 循环、"
        "是否使用临时变量），"
        f"并把学生自己起的名字统一；再比较每段连续的 {K} 个记号。发布的笔记本和参考答案里已有的内容不算证据，先行去除；"
        f"常见写法也不算：{COMMON_WAY} 名或更多学生提交的同一个程序会被标为常见写法，而不是抄袭。一对答案的分数是较短的"
        "答案有多少包含在另一份中，因此在抄来的答案里添加代码无法掩盖抄袭；两个比例都会显示。分数高只说明值得把两份答案"
        "都读一遍，并非结论。本页不改动任何分数。</span></p>",
    ]
    for r in results:
        parts.append(f'<h2 id="{e(r.assignment)}-{e(r.grade_id)}">{e(r.assignment)}: <code>{e(r.grade_id)}</code></h2>')
        parts.append(
            f'<p class="muted">{r.answers} answer(s) read; {r.too_short} too short to compare; '
            f"{r.listed} pair(s) at or above {SHOWN_AT:.0%}.<br>"
            f'<span lang="zh-CN">读取 {r.answers} 份答案；{r.too_short} 份太短，无法比较；'
            f"{r.listed} 对达到或超过 {SHOWN_AT:.0%}。</span></p>"
        )
        for way in r.ways:
            said = _both(
                f"a common way to write it: {len(way)} students handed in this one program",
                f"一种常见写法：{len(way)} 名学生提交了同一个程序",
            )
            parts.append(f"<p>{said} ({e(', '.join(way))})</p>")
        for group in r.groups:
            linked = _both(f"{len(group)} students linked by the pairs below", f"由下列各对相连的 {len(group)} 名学生")
            parts.append(f"<p>{_both('Group', '小组')}: {e(', '.join(group))} ({linked})</p>")
        for p in r.pairs[:SIMILARITY_PAIRS_SHOWN]:
            code = shown[(r.assignment, r.grade_id)]
            parts.append(
                f"<h3>{e(p.a)} &amp; {e(p.b)}: {p.score:.0%} ({p.shared} shared runs of {K} tokens)</h3>"
                f"<p>{p.a_share:.0%} of {e(p.a)}'s distinctive code is in {e(p.b)}'s answer; "
                f"{p.b_share:.0%} of {e(p.b)}'s is in {e(p.a)}'s.<br>"
                f'<span lang="zh-CN">{e(p.a)} 的独特代码有 {p.a_share:.0%} 出现在 {e(p.b)} 的答案中；'
                f"{e(p.b)} 的有 {p.b_share:.0%} 出现在 {e(p.a)} 的答案中。</span></p>"
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
            pairs = tuple(
                Pair(
                    str(p["a"]),
                    str(p["b"]),
                    float(p["score"]),
                    int(p["shared"]),
                    float(p["a_share"]),
                    float(p["b_share"]),
                )
                for p in d["pairs"]
            )
            groups = tuple(tuple(str(s) for s in g) for g in d["groups"])
            ways = tuple(tuple(str(s) for s in w) for w in d.get("ways", ()))
            counts = int(d["answers"]), int(d["too_short"]), int(d["listed"])
            r = ExerciseSimilarity(str(d["assignment"]), str(d["grade_id"]), *counts, pairs, groups, ways)
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
