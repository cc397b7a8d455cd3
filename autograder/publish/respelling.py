"""One spelling for what a student may write several ways (canonical.py, step 1), on the answer's own names.

    tree = respell(parse(code), keep)

- `jax.lax.f` is `lax.f`, `jax.numpy.f` is `jnp.f`;
- `a.sum()` is `jnp.sum(a)`, for the array reductions (`REDUCTIONS`) called on anything but a module;
  `jnp.array(xs)` and `jnp.asarray(xs)` are `jnp.stack(xs)`; `xs += [x]` is `xs.append(x)`;
- `range(0, n)` is `range(n)`; `i = a` then `while i < b:` ending in `i += 1` (no `continue`, `i` set nowhere
  else in the loop) is `for i in range(a, b):`;
- a call's result (or a part of one: `f(x)[1]`) named by a temporary, assigned once and read once, in the
  statement right after (padding passed over), is put back where it is read: `t = f(x); g(t)` is `g(f(x))`;
  and whatever value `return t` right after names: `r = a + b; return r` is `return a + b` (nothing reads
  that binding later, whatever else binds the name). A temporary of another kind stays: it is how the
  student split the work up. Never put back: a name of the exercise's (`keep`), one declared `global`, one
  read inside a lambda, comprehension or definition, or any where the answer reads its namespace by name
  (canonical._dynamic).

It rewrites spellings only: what runs stays (the order of evaluation moves a statement down at most), so a
copy is never hidden by it; it only makes two spellings of one program compare alike.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable

__all__ = ["REDUCTIONS", "respell"]

# array reductions a student writes either as `jnp.f(a)` or as `a.f()`
REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "any", "all", "argmax", "argmin", "std", "var"})
_MODULES = frozenset({"jnp", "np", "numpy", "lax", "jax", "math", "optax"})  # `M.sum(a)`: a module's function
_STACKS = frozenset({"array", "asarray"})  # `jnp.array(xs)` of a list is `jnp.stack(xs)`
_ALIASES = {"lax": "lax", "numpy": "jnp"}  # jax.<attr> -> the name the course imports it as
_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.FunctionDef)
_SCOPES += (ast.AsyncFunctionDef, ast.ClassDef)


class _Calls(ast.NodeTransformer):
    """The expression-level spellings: `jax.lax`, `a.sum()`, `range(0, n)`, `jnp.array(xs)`, `xs += [x]`."""

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        node = self.generic_visit(node)
        one = isinstance(node.value, ast.List) and len(node.value.elts) == 1
        if isinstance(node.op, ast.Add) and one and isinstance(node.target, ast.Name):
            target = ast.Name(node.target.id, ast.Load())
            call = ast.Call(ast.Attribute(target, "append", ast.Load()), [node.value.elts[0]], [])
            return ast.Expr(call, lineno=node.lineno)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        node = self.generic_visit(node)
        inner = node.value
        if (
            isinstance(inner, ast.Attribute)
            and isinstance(inner.value, ast.Name)
            and inner.value.id == "jax"
            and inner.attr in _ALIASES
        ):
            node.value = ast.Name(_ALIASES[inner.attr], ast.Load())
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in _STACKS and isinstance(f.value, ast.Name) and f.value.id == "jnp":
            f.attr = "stack"  # of a list of equal arrays: one array either way
        on_module = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in _MODULES
        if isinstance(f, ast.Attribute) and f.attr in REDUCTIONS and not on_module:
            jnp = ast.Attribute(ast.Name("jnp", ast.Load()), f.attr, ast.Load())
            return ast.Call(jnp, [f.value, *node.args], node.keywords)
        ranged = isinstance(f, ast.Name) and f.id == "range" and len(node.args) == 2 and not node.keywords
        if ranged and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0:
            node.args = node.args[1:]
        return node


def _free(scope: ast.AST) -> set[str]:
    """The names a nested scope reads and does not bind itself (what it may read of the enclosing function's),
    and those it declares global or nonlocal."""
    reads, binds = set(), set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else binds).add(node.id)
        elif isinstance(node, ast.arg):
            binds.add(node.arg)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            reads.update(node.names)
    return reads - binds | {n for g in ast.walk(scope) if isinstance(g, ast.Global | ast.Nonlocal) for n in g.names}


def _counts(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[Counter, Counter, set[str]]:
    """(how often each name is read, how often it is bound) in the function's own scope, and the names that are
    never a temporary: read in a scope nested in it (a closure, a comprehension) or declared global there."""
    reads, writes, pinned = Counter(), Counter(), set()
    todo = [*fn.body]
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            pinned |= _free(node)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                writes[node.name] += 1
            continue
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else writes)[node.id] += 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            reads[node.target.id] += 1
        elif isinstance(node, ast.Global | ast.Nonlocal):
            pinned.update(node.names)
        todo.extend(ast.iter_child_nodes(node))
    for arg in ast.walk(fn.args):
        if isinstance(arg, ast.arg):
            writes[arg.arg] += 1
    return reads, writes, pinned


def _loop(first: ast.stmt, second: ast.stmt) -> ast.For | None:
    """`i = a; while i < b: ...; i += 1` as `for i in range(a, b): ...` (None: not that loop)."""
    if not (
        isinstance(first, ast.Assign)
        and len(first.targets) == 1
        and isinstance(first.targets[0], ast.Name)
        and isinstance(second, ast.While)
        and not second.orelse
        and isinstance(second.test, ast.Compare)
        and isinstance(second.test.left, ast.Name)
        and len(second.test.ops) == 1
        and isinstance(second.test.ops[0], ast.Lt)
    ):
        return None
    v, last = first.targets[0].id, second.body[-1]
    step = (
        isinstance(last, ast.AugAssign)
        and isinstance(last.target, ast.Name)
        and last.target.id == v
        and isinstance(last.op, ast.Add)
        and isinstance(last.value, ast.Constant)
        and last.value.value == 1
    )
    body = second.body[:-1]
    stored = any(
        isinstance(n, ast.Name) and n.id == v and not isinstance(n.ctx, ast.Load) for b in body for n in ast.walk(b)
    )
    jumps = any(isinstance(n, ast.Continue) for b in body for n in ast.walk(b))
    if second.test.left.id != v or not step or not body or stored or jumps:
        return None
    start = first.value
    bounds = (
        [second.test.comparators[0]]
        if isinstance(start, ast.Constant) and start.value == 0
        else [start, second.test.comparators[0]]
    )
    return ast.For(
        ast.Name(v, ast.Store()), ast.Call(ast.Name("range", ast.Load()), bounds, []), body, [], lineno=first.lineno
    )


def _reads_in(stmt: ast.stmt, name: str) -> list[ast.Name] | None:
    """The reads of `name` in `stmt` outside any nested scope (None: it is read inside one, or `stmt` is one)."""
    if isinstance(stmt, _SCOPES):
        return None
    found, todo = [], list(ast.iter_child_nodes(stmt))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node)):
                return None
            continue
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            found.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return found


def _called(value: ast.expr) -> bool:
    """A call's result, or a part of one (`f(x)[1]`, `f(x).T`)."""
    while isinstance(value, ast.Subscript | ast.Attribute):
        value = value.value
    return isinstance(value, ast.Call)


class _Put(ast.NodeTransformer):
    def __init__(self, target: ast.Name, value: ast.expr):
        self.target, self.value = target, value

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.value if node is self.target else node


def _block(
    block: list[ast.stmt], counts: tuple[Counter, Counter, set[str]] | None, keep: set[str], idle: Callable
) -> list[ast.stmt]:
    """The block's `while` loops as `for`, and (in a function: `counts`, its names' reads and bindings) its
    temporaries put back where they are read."""
    out = list(block)
    i = 0
    while i + 1 < len(out):
        loop = _loop(out[i], out[i + 1])
        if loop is not None:
            out[i : i + 2] = [loop]
        i += 1
    if counts is None:
        return out
    reads, writes, pinned = counts
    for i in range(len(out) - 2, -1, -1):
        stmt = out[i]
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        t = stmt.targets[0].id
        after = next((j for j in range(i + 1, len(out)) if not idle(out[j])), None)
        if t in keep or t in pinned or after is None:
            continue
        nxt = out[after]
        uses = _reads_in(nxt, t)
        # a call hoisted out of the next statement, or a value only named by the `return` right after (then
        # nothing reads this binding later, whatever else binds the name); read once in all the function
        returned = isinstance(nxt, ast.Return) and isinstance(nxt.value, ast.Name) and nxt.value.id == t
        once = returned or (reads[t] == 1 and writes[t] == 1 and _called(stmt.value))
        if uses is not None and len(uses) == 1 and once:
            out[after] = _Put(uses[0], stmt.value).visit(out[after])
            del out[i]
    return out


def respell(
    tree: ast.Module, keep: set[str], dynamic: bool = False, idle: Callable[[ast.stmt], bool] = lambda stmt: False
) -> ast.Module:
    """The answer with one spelling for each of the module docstring's cases (rewritten in place, returned);
    `idle`: the statements of a function that are padding (canonical.Padding), passed over when a temporary's
    read is looked for in the statement after it."""
    tree = _Calls().visit(tree)

    def visit(node: ast.AST, counts: tuple[Counter, Counter, set[str]] | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            counts = None if dynamic else _counts(node)
        elif isinstance(node, ast.ClassDef):
            counts = None  # a class body's names are its attributes
        for child in ast.iter_child_nodes(node):
            visit(child, counts)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, field, _block(block, counts, keep, idle))

    visit(tree, None)
    return tree
