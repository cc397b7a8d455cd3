"""A copier's ordinary edits, as code -> code rewrites, and the copies of the project's corpora they are tried
on (issue 58): for every answer of `similarity_specs.honest_classes()` that the report can pair, its copy
with every name of its own renamed; each edit is applied to that copy, and the report must still list the
pair (original, edited copy) in its class. An edit that finds nothing to change in an answer is not counted
for it. Each rewrite is a syntax-tree rewrite (`ast`), so an edited copy is still the same program.

- `debug`: five lines of the copier's own debugging (`print`s of a parameter, its shape, type, repr and
  length) before the function's last `return`;
- `commute`: the operands of every `+`, `*`, `==` and `!=` swapped;
- `method`: `jnp.sum(a)` <-> `a.sum()` (and the other reductions), every one turned;
- `jax_lax`: `lax.f` -> `jax.lax.f`, `jnp.f` -> `jax.numpy.f`;
- `hoist`: a call's argument that is itself a call hoisted into a temporary before its statement;
- `return_temp`: `return f(x)` -> `r = f(x); return r`;
- `for_while`: `for i in range(n):` -> `i = 0; while i < n: ...; i += 1` (loops without `continue`);
- `idle`: an idle live line (`_pad = 0`, `_pad = None`, `_pad = <a parameter>`) after every second statement.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from functools import cache

from similarity_specs import SimilarityClass, honest_classes

REDUCTIONS = {"sum", "mean", "max", "min", "prod", "any", "all", "argmax", "argmin", "std", "var"}
MODULES = {"jnp", "np", "lax", "jax", "math"}


def _bodies(tree: ast.AST):
    """Every statement list of the tree (function bodies, loop bodies, branches)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield node, field, block


def _function(tree: ast.Module) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)


def rename(code: str) -> str:
    """The copy: every name the answer binds (but the exercise's function) renamed."""
    tree = ast.parse(code)
    keep = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)} - keep
    new = {name: f"{name.strip('_')}_c" for name in bound - keep}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in new:
            node.id = new[node.id]
        elif isinstance(node, ast.arg) and node.arg in new:
            node.arg = new[node.arg]
        elif isinstance(node, ast.FunctionDef) and node.name in new:
            node.name = new[node.name]
    return ast.unparse(tree)


def debug(tree: ast.Module) -> bool:
    fn = _function(tree)
    if fn is None or not isinstance(fn.body[-1], ast.Return) or not fn.args.args:
        return False
    a = fn.args.args[0].arg
    said = ("print('debug: about to return')", f"print('shape of {a}:', jnp.shape({a}))", f"print('type:', type({a}))")
    said += (f"print(f'{a} = {{{a}!r}}')", f"print('done', len(str({a})), 'characters')")
    lines = [ast.parse(line).body[0] for line in said]
    fn.body[-1:-1] = lines
    return True


def commute(tree: ast.Module) -> bool:
    changed = False
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
            node.left, node.right = node.right, node.left
            changed = True
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq | ast.NotEq):
            node.left, node.comparators = node.comparators[0], [node.left]
            changed = True
    return changed


class _Method(ast.NodeTransformer):
    changed = False

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if not isinstance(f, ast.Attribute) or f.attr not in REDUCTIONS:
            return node
        if isinstance(f.value, ast.Name) and f.value.id == "jnp" and node.args:  # jnp.sum(a) -> a.sum()
            self.changed = True
            return ast.Call(ast.Attribute(node.args[0], f.attr, ast.Load()), node.args[1:], node.keywords)
        if not (isinstance(f.value, ast.Name) and f.value.id in MODULES):  # a.sum() -> jnp.sum(a)
            self.changed = True
            jnp = ast.Attribute(ast.Name("jnp", ast.Load()), f.attr, ast.Load())
            return ast.Call(jnp, [f.value, *node.args], node.keywords)
        return node


def method(tree: ast.Module) -> bool:
    t = _Method()
    t.visit(tree)
    return t.changed


def jax_lax(tree: ast.Module) -> bool:
    changed = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("lax", "jnp"):
            sub = "lax" if node.value.id == "lax" else "numpy"
            node.value = ast.Attribute(ast.Name("jax", ast.Load()), sub, ast.Load())
            changed = True
    return changed


def _scoped(stmt: ast.stmt) -> set[int]:
    """The ids of nodes inside a lambda, comprehension or nested def of `stmt` (never hoisted out of)."""
    inner = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            inner |= {id(n) for n in ast.walk(node)}
    return inner


def hoist(tree: ast.Module) -> bool:
    count = 0
    for _, _, block in list(_bodies(tree)):
        i = 0
        while i < len(block):
            stmt = block[i]
            if isinstance(stmt, ast.Assign | ast.Expr | ast.Return):
                inner = _scoped(stmt)
                for call in [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and id(n) not in inner]:
                    for j, arg in enumerate(call.args):
                        if isinstance(arg, ast.Call):
                            name = f"tmp_{count}"
                            count += 1
                            block.insert(i, ast.Assign([ast.Name(name, ast.Store())], arg, lineno=0))
                            call.args[j] = ast.Name(name, ast.Load())
                            i += 1
                            break
                    else:
                        continue
                    break
            i += 1
    return count > 0


def return_temp(tree: ast.Module) -> bool:
    changed = False
    for _, _, block in list(_bodies(tree)):
        for stmt in list(block):
            if isinstance(stmt, ast.Return) and stmt.value is not None and not isinstance(stmt.value, ast.Name):
                at = block.index(stmt)
                block[at : at + 1] = [
                    ast.Assign([ast.Name("result", ast.Store())], stmt.value, lineno=0),
                    ast.Return(ast.Name("result", ast.Load())),
                ]
                changed = True
    return changed


def for_while(tree: ast.Module) -> bool:
    changed = False
    for _, _, block in list(_bodies(tree)):
        for stmt in list(block):
            if not (
                isinstance(stmt, ast.For)
                and isinstance(stmt.target, ast.Name)
                and isinstance(stmt.iter, ast.Call)
                and isinstance(stmt.iter.func, ast.Name)
                and stmt.iter.func.id == "range"
                and 1 <= len(stmt.iter.args) <= 2
                and not stmt.orelse
                and not any(isinstance(n, ast.Continue) for n in ast.walk(stmt))
            ):
                continue
            v = stmt.target.id
            start, stop = (ast.Constant(0), *stmt.iter.args) if len(stmt.iter.args) == 1 else stmt.iter.args
            loop = ast.While(
                ast.Compare(ast.Name(v, ast.Load()), [ast.Lt()], [stop]),
                [*stmt.body, ast.AugAssign(ast.Name(v, ast.Store()), ast.Add(), ast.Constant(1))],
                [],
            )
            at = block.index(stmt)
            block[at : at + 1] = [ast.Assign([ast.Name(v, ast.Store())], start, lineno=0), loop]
            changed = True
    return changed


def idle(tree: ast.Module) -> bool:
    fn = _function(tree)
    arg = fn.args.args[0].arg if fn is not None and fn.args.args else "None"
    pads = ["_pad = 0", "_pad = None", f"_pad = {arg}"]
    changed = False
    for _, _, block in list(_bodies(tree)):
        for k, stmt in enumerate([s for i, s in enumerate(block) if i % 2 == 1 and not isinstance(s, ast.Return)]):
            block.insert(block.index(stmt) + 1, ast.parse(pads[k % len(pads)]).body[0])
            changed = True
    return changed


EDITS: dict[str, Callable[[ast.Module], bool]] = {
    "debug": debug,
    "commute": commute,
    "method": method,
    "jax_lax": jax_lax,
    "hoist": hoist,
    "return_temp": return_temp,
    "for_while": for_while,
    "idle": idle,
}


def edited(code: str, edit: str) -> str | None:
    """The copy of `code` with `edit` applied (None: the edit finds nothing to change)."""
    tree = ast.parse(rename(code))
    if not EDITS[edit](tree):
        return None
    return ast.unparse(ast.fix_missing_locations(copy.deepcopy(tree)))


@cache
def context(assignment: str, grade_id: str) -> tuple[set[int], set[str], set[str]]:
    """(ignored k-grams, the course's names, the stub's names) of one answer cell, as `compare_class` makes them."""
    from similarity_specs import notebook

    from autograder.course.notebooks import cell_source
    from autograder.publish.similarity import _module_names, common_kgrams, vocabulary

    src = notebook(assignment)
    known = vocabulary(src)
    stub = src.stubs.get(grade_id, "")
    course = common_kgrams([cell_source(c) for c in src.nb.cells if c.cell_type == "code"], known)
    return course | common_kgrams([stub], known), known, _module_names(stub)


def listed(klass: SimilarityClass, code: str, copied: str) -> bool:
    """Whether the report lists the pair (the answer, its edited copy) in the answer's class."""
    from autograder.publish.similarity import compare_answers

    ignored, known, keep = context(klass.assignment, klass.grade_id)
    return bool(compare_answers({"a": code, "b": copied}, ignored, known, keep)[0])


@cache
def corpus() -> tuple[tuple[SimilarityClass, str], ...]:
    """(class, student) for every distinct answer of the honest corpus whose renamed copy the report lists."""
    out = []
    for klass in honest_classes():
        seen = set()
        for student, code in sorted(klass.answers.items()):
            if code in seen:
                continue
            seen.add(code)
            try:
                copied = rename(code)
            except SyntaxError:
                continue
            if listed(klass, code, copied):
                out.append((klass, student))
    return tuple(out)


def table() -> dict[str, tuple[int, int]]:
    """edit -> (copies still listed, copies the edit changes)."""
    out = {}
    for edit in EDITS:
        hits = total = 0
        for klass, student in corpus():
            code = klass.answers[student]
            copied = edited(code, edit)
            if copied is None:
                continue
            total += 1
            hits += listed(klass, code, copied)
        out[edit] = (hits, total)
    return out
