"""Fixture classes for the similarity report, as specs: who hands in what, and which pairs must be listed.

A `SimilarityClass` names one answer cell of one notebook, every student's answer to it (as typed), and
the copies in it: the pairs the report must list. Every other pair of the class is honest, written apart,
and must not be listed. The answers are code as a student would type it, never run.

- `EVASIONS`: a class of ten on notebook 04's `train` with each way a copy slipped past the old report
  (issue 48): a copy with every name wrapped in parentheses (`(history).append((loss))`), a copy with a
  filler token every few tokens (`+ 0`, `* 1`, redundant `()`), a ring of three students handing in one
  answer (renamed, re-commented), and one answer padded after its `return` with variants written in its
  own words, beside the honest scan and indexed answers those variants resemble.
- `wrong_copy_class()`: notebook 09's `causal_ring_attention`, where one student adapts the notebook's own
  ring attention with a distinctive mistake (the causal mask on block-local positions, 14 lines) and
  another hands in that answer renamed and re-commented. Both are mostly the course's code, so little
  is left once that is removed, and the old report listed no pair: it kept a name the notebook also
  uses (`to_next`) as the course's when one student bound it, and the renamed copy's own name not.
- `NATURAL`: a natural class of twelve plain-loop answers to notebook 04's `train`, written apart: the
  plain loop is one program after renaming, and the old report listed 6 of its 66 pairs (issue 58).
- `honest_classes()`: for every answer cell of notebooks 01-11, the answers the other tests already hold,
  each written apart from the others: the reference solution (twice: many students write the notebook's
  way), the untouched stub (twice), the plausible wrong answer and the equivalent right answer of the
  tamper corpus (tamper_specs.py), the ways of answer_class.py for notebook 04's `train`, and every
  answer the exercise's own tests hold as a function named after it (tests/namedaxes/exercises/, right
  and wrong ones: `train_python_loop`, `local_rows_split`, `ref_ring_all_reduce`, ...). None of their
  pairs is a copy.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from functools import cache
from itertools import combinations

import tamper_specs
from answer_class import INDEXED, LOOP, REFERENCE, SCAN, source

from autograder.course.classroom import typed_solution
from autograder.course.discovery import repo_root
from autograder.course.notebooks import SourceNotebook

A04, A09 = "04_gradient_averaging", "09_large_models"


@dataclass(frozen=True)
class SimilarityClass:
    name: str
    assignment: str
    grade_id: str
    answers: dict[str, str]  # student -> their answer cell, as typed
    copies: frozenset[frozenset[str]] = field(default_factory=frozenset)  # the pairs that must be listed

    def honest_pairs(self) -> set[frozenset[str]]:
        return {frozenset(p) for p in combinations(self.answers, 2)} - set(self.copies)


def copies(*groups: tuple[str, ...]) -> frozenset[frozenset[str]]:
    """Every pair inside each group (a group of three is a ring: three pairs)."""
    return frozenset(frozenset(p) for g in groups for p in combinations(g, 2))


# ---------------------------------------------------------------- notebook 04, `train`: the evasions
PARENTHESISED = """def train(params, sharded_batch, steps):
    (history) = []
    for (step) in (range)((steps)):
        (params), (loss) = (p_update_step)((params), (sharded_batch))
        (history).append((loss))
    (_), (last) = (p_update_step)((params), (sharded_batch))
    (history).append((last))
    return (params), (jnp).stack((history))
"""
# INDEXED renamed, with `+ 0`, `* 1` or redundant parentheses every few tokens
FILLER = """def train(params, sharded_batch, steps):
    trace = jnp.zeros((steps + 0) + 1) * 1
    w = (params)
    k = 0 + 0
    while (k) < steps * 1:
        w, cost = p_update_step((w), sharded_batch)
        trace = (trace).at[k * 1].set(cost + 0)
        k += (1)
    trace = trace.at[(steps) * 1].set((p_update_step(w, sharded_batch))[1] + 0)
    return (w), trace * 1
"""
RING = """def train(params, sharded_batch, steps):
    recorded = [None] * (steps + 1)
    current = params
    for t in range(steps + 1):
        updated, recorded[t] = p_update_step(current, sharded_batch)
        if t < steps:
            current = updated
    return current, jnp.array(recorded)
"""
RING_RENAMED = """def train(params, sharded_batch, steps):
    # one slot per loss, the last one after the loop
    out = [None] * (steps + 1)

    state = params
    for n in range(steps + 1):
        nxt, out[n] = p_update_step(state, sharded_batch)  # loss of `state`
        if n < steps:
            state = nxt  # keep going
    return state, jnp.array(out)
"""
RING_RECOMMENTED = """def train(params, sharded_batch, steps):
    vals = [None] * (steps + 1)  # losses
    p = params
    for j in range(steps + 1):
        p2, vals[j] = p_update_step(p, sharded_batch)
        # do not step after the last loss
        if j < steps:
            p = p2
    return p, jnp.array(vals)
"""
# A fori_loop answer, padded after its `return` with a scan and an indexed loop in its own words
PADDED = """def train(params, sharded_batch, steps):
    def body(i, carry):
        p, ls = carry
        p, l = p_update_step(p, sharded_batch)
        return p, ls.at[i].set(l)
    params, ls = lax.fori_loop(0, steps, body, (params, jnp.zeros(steps + 1)))
    return params, ls.at[steps].set(p_update_step(params, sharded_batch)[1])
    def body(carry, _):
        new, loss = p_update_step(carry, sharded_batch)
        return new, loss
    params, losses = lax.scan(body, params, None, length=steps)
    final = p_update_step(params, sharded_batch)[1]
    return params, jnp.concatenate([losses, final[None]])
    losses = jnp.zeros(steps + 1)
    i = 0
    while i < steps:
        params, l = p_update_step(params, sharded_batch)
        losses = losses.at[i].set(l)
        i += 1
    losses = losses.at[steps].set(p_update_step(params, sharded_batch)[1])
    return params, losses
"""

EVASIONS = SimilarityClass(
    "evasions",
    A04,
    "train_answer",
    {
        "ann": LOOP,
        "ben": PARENTHESISED,  # ann's, every name in parentheses
        "cy": SCAN,
        "dee": INDEXED,
        "eve": REFERENCE,
        "fay": FILLER,  # dee's, renamed, with filler tokens
        "gus": RING,
        "hal": RING_RENAMED,
        "ivy": RING_RECOMMENTED,
        "jo": PADDED,  # its variants after `return` read like cy's and dee's
    },
    copies(("ann", "ben"), ("dee", "fay"), ("gus", "hal", "ivy")),
)

# ---------------------------------------------------------------- notebook 09: a distinctive wrong answer
# The notebook's ring attention (section 3) made causal with the mask on the block's own positions (the
# global offsets forgotten): wrong, and written the way only this student wrote it.
LOCAL_MASK = """def causal_ring_attention(q, k, v, mesh):
    n = mesh.shape[SEQUENCE]
    to_next = [(i, (i + 1) % n) for i in range(n)]
    def local(q_block, k_block, v_block):
        b, h = q_block.shape
        m, total, acc = jnp.full((b,), -jnp.inf), jnp.zeros((b,)), jnp.zeros((b, h))
        causal = jnp.tril(jnp.ones((b, b), bool))
        for s in range(n):
            scores = jnp.where(causal, q_block @ k_block.T / np.sqrt(h), -jnp.inf)
            m_new = jnp.maximum(m, scores.max(axis=1))
            p, fix = jnp.exp(scores - m_new[:, None]), jnp.exp(m - m_new)
            total, acc, m = total * fix + p.sum(axis=1), acc * fix[:, None] + p @ v_block, m_new
            k_block, v_block = lax.ppermute((k_block, v_block), SEQUENCE, to_next)
        return acc / total[:, None]
    return jax.shard_map(local, mesh=mesh, in_specs=(P(SEQUENCE),) * 3, out_specs=P(SEQUENCE))(q, k, v)
"""
LOCAL_MASK_RENAMED = """def causal_ring_attention(q, k, v, mesh):
    size = mesh.shape[SEQUENCE]
    nxt = [(d, (d + 1) % size) for d in range(size)]

    def per_device(qq, kk, vv):
        rows, dim = qq.shape
        mx, norm, out = jnp.full((rows,), -jnp.inf), jnp.zeros((rows,)), jnp.zeros((rows, dim))
        lower = jnp.tril(jnp.ones((rows, rows), bool))  # causal
        for step in range(size):
            sc = jnp.where(lower, qq @ kk.T / np.sqrt(dim), -jnp.inf)
            mx2 = jnp.maximum(mx, sc.max(axis=1))
            e, corr = jnp.exp(sc - mx2[:, None]), jnp.exp(mx - mx2)
            norm, out, mx = norm * corr + e.sum(axis=1), out * corr[:, None] + e @ vv, mx2
            kk, vv = lax.ppermute((kk, vv), SEQUENCE, nxt)  # pass keys on
        return out / norm[:, None]

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(SEQUENCE),) * 3, out_specs=P(SEQUENCE))(q, k, v)
"""


@cache
def notebook(assignment: str) -> SourceNotebook:
    """The source notebook, loaded once for all these classes (read only)."""
    return source(assignment)


def reference(source: SourceNotebook, grade_id: str) -> str:
    """The reference answer as a student would type it (the solution markers removed)."""
    by_gid, _ = source.cell_index()
    return typed_solution(source.nb.cells[by_gid[grade_id]].source)


def wrong_copy_class() -> SimilarityClass:
    src = notebook(A09)
    gid = "causal_ring_attention_answer"
    ref = reference(src, gid)
    return SimilarityClass(
        "wrong copy",
        A09,
        gid,
        {
            "kim": LOCAL_MASK,
            "lea": LOCAL_MASK_RENAMED,
            "max": ref,
            "ned": ref,
            "ola": tamper_specs.WRONG[A09][gid],
            "pat": tamper_specs.EQUIVALENT[A09][gid],
            "quin": src.stubs[gid],
        },
        copies(("kim", "lea")),
    )


def exercise_tests_answers(assignment: str, stub: str) -> dict[str, str]:
    """The answers the exercise's own tests hold as functions (tests/namedaxes/exercises/test_<name>.py):
    every top-level function named after the exercise, with the stub's number of parameters, renamed as
    a student's answer is (`def train_python_loop(...)` becomes `def train(...)`). Read, never imported."""
    path = repo_root() / "tests" / "namedaxes" / "exercises" / f"test_{assignment.split('_', 1)[1]}.py"
    stubs = [n for n in ast.parse(stub).body if isinstance(n, ast.FunctionDef)]
    if not path.exists() or not stubs:
        return {}
    text = path.read_text(encoding="utf-8")
    name, arity = stubs[0].name, len(stubs[0].args.args)
    return {
        f.name: textwrap.dedent(ast.get_source_segment(text, f) or "").replace(f"def {f.name}(", f"def {name}(", 1)
        for f in ast.parse(text).body
        if isinstance(f, ast.FunctionDef)
        and name in f.name
        and not f.name.startswith("test_")
        and len(f.args.args) == arity
    }


def honest_classes() -> list[SimilarityClass]:
    """One class per answer cell of every notebook: the answers the other tests hold, none a copy."""
    classes = []
    for assignment in sorted(p.stem for p in (repo_root() / "solutions").glob("[0-9]*.ipynb")):
        src = notebook(assignment)
        for gid in src.answer_ids:
            ref = reference(src, gid)
            answers = {"ref1": ref, "ref2": ref, "stub1": src.stubs[gid], "stub2": src.stubs[gid]}
            for kind, corpus in (("wrong", tamper_specs.WRONG), ("equivalent", tamper_specs.EQUIVALENT)):
                if gid in corpus.get(assignment, {}):
                    answers[kind] = corpus[assignment][gid]
            if (assignment, gid) == (A04, "train_answer"):
                answers |= {"loop": LOOP, "scan": SCAN, "indexed": INDEXED}
            seen = {ast.dump(ast.parse(code)) for code in answers.values()}
            for name, code in exercise_tests_answers(assignment, src.stubs[gid]).items():
                if ast.dump(ast.parse(code)) not in seen:  # one answer kept in two corpora is one student's
                    answers[name] = code
            classes.append(SimilarityClass(f"honest {assignment} {gid}", assignment, gid, answers))
    return classes


# ---------------------------------------------------------------- notebook 04: a natural class (issue 58)
# Twelve plain-loop answers to `train`, each written apart, as twelve students would: after renaming, the
# plain loop is a handful of programs, and several students write each one. None of their pairs is a copy.
NATURAL_LOOPS = (
    """def train(params, sharded_batch, steps):
    losses = []
    for _ in range(steps):
        params, loss = p_update_step(params, sharded_batch)
        losses.append(loss)
    _, loss = p_update_step(params, sharded_batch)
    losses.append(loss)
    return params, jnp.stack(losses)
""",
    """def train(params, sharded_batch, steps):
    # record the loss of every step
    history = []
    for i in range(steps):
        params, l = p_update_step(params, sharded_batch)
        history.append(l)
    # loss after the last update
    _, l = p_update_step(params, sharded_batch)
    history.append(l)
    return params, jnp.stack(history)
""",
    """def train(params, sharded_batch, steps):
    out = []
    for step in range(steps):
        params, loss = p_update_step(params, sharded_batch)
        out.append(loss)
    out.append(p_update_step(params, sharded_batch)[1])
    return params, jnp.stack(out)
""",
    """def train(params, sharded_batch, steps):
    losses = []
    for _ in range(steps):
        params, loss = p_update_step(params, sharded_batch)
        losses.append(loss)
    final_loss = p_update_step(params, sharded_batch)[1]
    losses.append(final_loss)
    return params, jnp.array(losses)
""",
    """def train(params, sharded_batch, steps):
    all_losses = []
    for s in range(steps):
        new_params, loss = p_update_step(params, sharded_batch)
        all_losses.append(loss)
        params = new_params
    _, last_loss = p_update_step(params, sharded_batch)
    all_losses.append(last_loss)
    return params, jnp.stack(all_losses)
""",
    """def train(params, sharded_batch, steps):
    losses = []
    for _ in range(steps + 1):
        new_params, loss = p_update_step(params, sharded_batch)
        losses.append(loss)
        if len(losses) <= steps:
            params = new_params
    return params, jnp.stack(losses)
""",
    """def train(params, sharded_batch, steps):
    p = params
    ls = []
    for i in range(steps):
        p, l = p_update_step(p, sharded_batch)
        ls.append(l)
    _, l = p_update_step(p, sharded_batch)
    ls.append(l)
    return p, jnp.stack(ls)
""",
    """def train(params, sharded_batch, steps):
    loss_list = []
    step = 0
    while step < steps:
        params, loss = p_update_step(params, sharded_batch)
        loss_list.append(loss)
        step += 1
    _, loss = p_update_step(params, sharded_batch)
    loss_list.append(loss)
    return params, jnp.stack(loss_list)
""",
    """def train(params, sharded_batch, steps):
    losses = []
    for _ in range(steps):
        params, loss = p_update_step(params, sharded_batch)
        losses.append(loss)
    losses.append(p_update_step(params, sharded_batch)[1])
    return params, jnp.asarray(losses)
""",
    """def train(params, sharded_batch, steps):
    recorded = []
    for k in range(steps):
        params, current = p_update_step(params, sharded_batch)
        recorded.append(current)
    _, current = p_update_step(params, sharded_batch)
    recorded.append(current)
    return params, jnp.stack(recorded)
""",
    """def train(params, sharded_batch, steps):
    losses = []
    for _ in range(steps):
        params, loss = p_update_step(params, sharded_batch)
        losses += [loss]
    losses += [p_update_step(params, sharded_batch)[1]]
    return params, jnp.stack(losses)
""",
    """def train(params, sharded_batch, steps):
    vals = []
    for i in range(steps):
        params, v = p_update_step(params, sharded_batch)
        vals.append(v)
    vals.append(p_update_step(params, sharded_batch)[1])
    return params, jnp.array(vals)
""",
)
NATURAL = SimilarityClass(
    "natural class", A04, "train_answer", {f"s{i:02d}": code for i, code in enumerate(NATURAL_LOOPS, 1)}
)


# ---------------------------------------------------------------- notebook 04: live code hidden as dead (issue 58)
def _indented(code: str, by: str) -> str:
    return "".join(by + line if line.strip() else line for line in code.splitlines(keepends=True))


_RING_BODY = RING.split("\n", 1)[1]  # the copied answer's body, indented for `def train`
# each a copy of RING (gus's answer) with its body where the old normaliser took it for code that never runs
HIDDEN = {
    # a `while` whose test is false never runs its body, but always its `else:`
    "while_else": "def train(params, sharded_batch, steps):\n    while 0:\n        pass\n    else:\n"
    + _indented(_RING_BODY, "    "),
    # a helper never read as a plain name, reached through the module's namespace
    "globals": "def train_impl(params, sharded_batch, steps):\n"
    + _RING_BODY
    + "def train(params, sharded_batch, steps):\n"
    + "    return globals()['train' + '_impl'](params, sharded_batch, steps)\n",
    # a helper a decorator registers, called through the registry
    "registry": "_impl = []\n@_impl.append\ndef helper(params, sharded_batch, steps):\n"
    + _RING_BODY
    + "def train(params, sharded_batch, steps):\n    return _impl[0](params, sharded_batch, steps)\n",
    # a helper fetched by getattr on a class
    "getattr": "class Impl:\n    @staticmethod\n    def run(params, sharded_batch, steps):\n"
    + _indented(_RING_BODY, "    ")
    + "def train(params, sharded_batch, steps):\n    return getattr(Impl, 'ru' + 'n')(params, sharded_batch, steps)\n",
}
