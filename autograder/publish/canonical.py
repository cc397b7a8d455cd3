"""An answer cell as what it does, its spelling removed: the first step of the similarity report (similarity.py).

    canonical_tokens(code, known, keep)   # the tokens of the answer's canonical program

The code is parsed (Python's `ast`, nothing executed) and written back from its syntax tree, so parentheses
that change nothing, comments, docstrings, layout and type annotations are gone. Then, in this order:

1. **Spellings of one program are made one** (respelling.py, on the answer's own names): `jax.lax.f` is
   `lax.f` and `jax.numpy.f` is `jnp.f`; `a.sum()` is `jnp.sum(a)` (and the other reductions, respelling.REDUCTIONS);
   a temporary assigned once and read once, in the next statement, is put back where it is read (`t = f(x);
   g(t)` is `g(f(x))`, `r = f(x); return r` is `return f(x)`); `i = a; while i < b: ...; i += 1` is `for i
   in range(a, b)` and `range(0, n)` is `range(n)`.
2. **Padding is removed** (`_idle`): statements that run but whose effect never reaches a result: `pass`, a
   bare name or constant, `x = x`, a store of a constant or a name to a name of the function that nothing
   reads, and a `print` of plain values (names, constants, attributes, f-strings, `len`/`str`/`repr`/`type`/
   `jnp.shape` of them): a copier's debugging lines and idle lines say nothing of how the answer works.
3. **What never runs is removed, and only that** (`_block`): the branch of an `if` on a constant that is not
   taken, `while <false>:` (its `else:` runs, so it stays, in the loop's place), code after a `return`,
   `raise`, `break` or `continue` in its block, `x + 0`, `x * 1`, `+x`, `--x`, `and True`, `a if True else
   b`; and a function defined and never reached: only when the answer cannot reach a definition but by its
   name (`_dynamic`: no `globals()`, `locals()`, `vars()`, `getattr`, `eval`, `exec`, `sys`, `inspect`,
   `__dict__`, ... anywhere), the definition has no decorator (a decorator runs, and may register it), it is
   not in a class (methods are reached through `self.` and dunder hooks), and its name is read nowhere, not
   even as an attribute or inside a string. The exercise's own function stays (`keep`).
4. **Names**: every name the answer binds (parameters, assignments, loop variables, its functions) becomes `V`,
   and so does any name the course does not give; the course's names used as given (`lax`, `jnp`, `DEVICES`,
   a helper of the notebook), keywords, built-ins, attributes (`.psum`) and keyword arguments (`tiled=`) stay,
   so `lax.pmean` stays unlike `lax.psum`. Numbers become `N`, strings `S`. The operands of `+`, `*`, `&`,
   `|`, `^`, `==` and `!=` are put in one order (`b + a` is `a + b`).

A cell that does not parse (a syntax error; IPython's `%`/`!` lines are read as `pass` first) is compared by
its tokens instead. Threat model: the code is a student's; it is parsed only (never compiled or run), cut at
`SIMILARITY_ANSWER_CHARS`, and a tree deeper than `_MAX_DEPTH` falls back to tokens.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings

from ..limits import SIMILARITY_ANSWER_CHARS
from .respelling import respell

__all__ = ["OWN", "canonical_tokens", "parse"]

OWN = "V"  # what every name of the student's own becomes
_MAX_DEPTH = 200  # syntax-tree depth the rewriting follows; deeper: the tokens are compared instead
_IDENTIFIERS = re.compile(r"[A-Za-z_]\w*")
_WORDS = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?|\S")
_SHELL = re.compile(r"^([ \t]*)[%!].*$", re.MULTILINE)  # IPython's %magic and !shell lines
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
_ENDS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
# what makes a definition reachable other than by its name: the answer's namespace read or searched
_DYNAMIC = frozenset(
    {"globals", "locals", "vars", "getattr", "setattr", "hasattr", "delattr", "eval", "exec", "compile", "dir"}
    | {"__import__", "__builtins__", "__name__", "__dict__", "__globals__", "sys", "inspect", "importlib"}
    | {"f_globals", "f_locals", "_getframe", "currentframe", "modules"}
)
_PURE_CALLS = frozenset({"len", "str", "repr", "type", "shape", "format", "round", "int", "float", "id"})
_COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)


def _raw_tokens(code: str) -> list[tuple[int, str]]:
    try:
        return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(code).readline)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [(tokenize.OP, w) for w in _WORDS.findall(code)]


def _tokens(code: str, known: set[str] | None) -> list[str]:
    """The code's tokens with comments and layout dropped, numbers `N`, strings `S`; with `known`, every
    name outside it (and not after a dot) becomes OWN (the fallback for a cell that does not parse)."""
    out: list[str] = []
    after_dot = False
    for kind, text in _raw_tokens(code):
        name = tokenize.tok_name.get(kind, "")
        if kind in _SKIPPED or name in ("FSTRING_MIDDLE", "FSTRING_END"):
            continue
        if kind == tokenize.NEWLINE:
            token = ";"
        elif kind == tokenize.NUMBER or (kind == tokenize.OP and text[:1].isdigit()):
            token = "N"
        elif kind == tokenize.STRING or name == "FSTRING_START":
            token = "S"
        elif kind == tokenize.NAME or (kind == tokenize.OP and (text[:1].isalpha() or text[:1] == "_")):
            token = text if (known is None or after_dot or text in known) else OWN
        else:
            token = text
        out.append(token)
        after_dot = text == "."
    return out


def _is(node: ast.AST, value: float) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == value


def _truth(node: ast.AST) -> bool | None:
    """The truth of a constant test (`if True:`, `while 0:`); None when it is not a constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bytes | bool | type(None)):
        return bool(node.value)
    return None


def _names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(every name the code binds: the student's own, whatever the course calls its names; every name it reads)."""
    bound: set[str] = set()
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)  # `self.helper`, `module.helper`: a read all the same
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.update(_IDENTIFIERS.findall(node.value))  # a name spelled in a string may be looked up by it
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
    return bound, used


def parse(code: str) -> ast.Module:
    """The syntax tree of a cell, IPython's `%`/`!` lines read as `pass`; the parser's warnings about the
    student's code (an invalid escape, `is` with a literal) are not the grader's to print."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(_SHELL.sub(lambda m: m.group(1) + "pass", code))


def _dynamic(tree: ast.AST) -> bool:
    """Whether the answer may reach a definition other than by its name (it reads or searches a namespace)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _DYNAMIC:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _DYNAMIC:
            return True
    return False


def _inert(node: ast.AST) -> bool:
    """A constant, a name, or a tuple or list of them: evaluating it does nothing and cannot fail."""
    if isinstance(node, ast.Tuple | ast.List):
        return all(_inert(v) for v in node.elts)
    return isinstance(node, ast.Constant | ast.Name)


def _plain(node: ast.AST) -> bool:
    """An expression whose evaluation changes nothing: constants, names, attributes, subscripts and f-strings of
    them, containers of them, and `len`/`str`/`repr`/`type`/`x.shape`-like calls of them."""
    if isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.Attribute | ast.Starred | ast.FormattedValue | ast.UnaryOp):
        inner = {ast.Attribute: "value", ast.Starred: "value", ast.FormattedValue: "value", ast.UnaryOp: "operand"}
        return _plain(getattr(node, inner[type(node)]))
    if isinstance(node, ast.Subscript):
        return _plain(node.value) and _plain(node.slice)
    if isinstance(node, ast.JoinedStr | ast.Tuple | ast.List):
        return all(_plain(v) for v in (node.values if isinstance(node, ast.JoinedStr) else node.elts))
    if isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        return name in _PURE_CALLS and all(_plain(a) for a in node.args) and not node.keywords
    return False


class Padding:
    """Statements that run but whose effect reaches no result (the module docstring, step 2)."""

    def __init__(self, tree: ast.AST, keep: set[str]):
        bound, self.used = _names(tree)
        self.keep = keep
        self.shared = {n for g in ast.walk(tree) if isinstance(g, ast.Global | ast.Nonlocal) for n in g.names}
        self.printing = "print" not in bound  # the answer's own `print` may do anything

    def idle(self, stmt: ast.stmt, in_function: bool) -> bool:
        """`pass`, a bare name or constant, a `print` of plain values, `x = x`, and (in a function) a store of a
        constant or a name to a name nothing reads."""
        if isinstance(stmt, ast.Pass):
            return True
        if isinstance(stmt, ast.Expr):
            call = stmt.value
            printed = isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print"
            said = [*call.args, *(k.value for k in call.keywords)] if printed else []
            return isinstance(call, ast.Constant | ast.Name) or (printed and self.printing and all(map(_plain, said)))
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
            if isinstance(value, ast.Name) and value.id == target:
                return True  # x = x
            unread = target not in self.used and target not in self.shared and target not in self.keep
            return unread and in_function and _inert(value)
        return False


class _Canonical(ast.NodeTransformer):
    """Rewrites a parsed answer into what it does: padding and what never runs dropped, the student's names `V`."""

    def __init__(self, known: set[str], keep: set[str], tree: ast.AST, bound_own: bool = True):
        bound, self.used = _names(tree)
        self.known = known - bound if bound_own else known
        self.keep = keep
        self.depth = 0
        self.dynamic = _dynamic(tree)
        self.padding = Padding(tree, keep)
        self.scopes: list[type] = [ast.Module]  # the definitions the visit is in

    def _name(self, name: str) -> str:
        return name if name in self.known else OWN

    def _idle(self, stmt: ast.stmt) -> bool:
        """Padding (`Padding`), or a definition nothing reaches (the module docstring, step 3)."""
        if self.padding.idle(stmt, self.scopes[-1] in (ast.FunctionDef, ast.AsyncFunctionDef)):
            return True
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            hidden = self.dynamic or stmt.decorator_list or self.scopes[-1] is ast.ClassDef
            return not hidden and stmt.name not in self.used and stmt.name not in self.keep
        return False

    def _block(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """A statement list without its idle statements and without what can never run."""
        out: list[ast.stmt] = []
        for stmt in body:
            truth = _truth(stmt.test) if isinstance(stmt, ast.If | ast.While) else None
            if self._idle(stmt):
                continue
            if isinstance(stmt, ast.While) and truth is False:
                out.extend(self._block(stmt.orelse))  # the loop never runs, so its `else:` always does
            elif isinstance(stmt, ast.If) and truth is not None:
                out.extend(self._block(stmt.body if truth else stmt.orelse))
            else:
                out.append(stmt)
            if out and isinstance(out[-1], _ENDS):
                break
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise RecursionError("answer nested too deeply to rewrite")
        for name, value in ast.iter_fields(node):
            if isinstance(value, list):
                if value and all(isinstance(v, ast.stmt) for v in value):
                    value = self._block(value)
                    kept = [w for w in (self.visit(v) for v in value) if w is not None]
                    setattr(node, name, kept or [ast.Pass()])
                else:
                    setattr(node, name, [self.visit(v) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, name, self.visit(value))
        self.depth -= 1
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._name(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg, node.annotation = OWN, None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        node.name, node.returns = OWN, None
        return self._inside(node)

    def _inside(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.AST:
        self.scopes.append(type(node))
        try:
            return self.generic_visit(node)
        finally:
            self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = OWN
        return self._inside(node)

    def visit_alias(self, node: ast.alias) -> ast.AST:
        if node.asname is not None:
            node.asname = OWN
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        node.name = OWN if node.name else None
        return self.generic_visit(node)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> ast.AST:
        node.names = [OWN for _ in node.names]
        return node

    visit_Nonlocal = visit_Global

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        node = self.generic_visit(node)
        if node.value is None:
            return None  # a bare annotation does nothing
        return ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        node = self.generic_visit(node)
        if isinstance(node.op, _COMMUTATIVE) and ast.dump(node.right) < ast.dump(node.left):
            node.left, node.right = node.right, node.left  # one order: `b + a` is `a + b`
        if isinstance(node.op, ast.Add | ast.Sub) and _is(node.right, 0):
            return node.left
        if isinstance(node.op, ast.Add) and _is(node.left, 0):
            return node.right
        if isinstance(node.op, ast.Mult | ast.Div | ast.Pow) and _is(node.right, 1):
            return node.left
        if isinstance(node.op, ast.Mult) and _is(node.left, 1):
            return node.right
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        node = self.generic_visit(node)
        if isinstance(node.op, ast.UAdd):
            return node.operand
        inner = node.operand
        if isinstance(inner, ast.UnaryOp) and type(inner.op) is type(node.op):
            return inner.operand  # --x, ~~x, not not x
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id == "range" and len(node.args) == 2 and _is(node.args[0], 0):
            node.args = node.args[1:]  # range(0, n) is range(n), once `0 + 0` is 0
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        node = self.generic_visit(node)
        swap = len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq | ast.NotEq)
        if swap and ast.dump(node.comparators[0]) < ast.dump(node.left):
            node.left, node.comparators = node.comparators[0], [node.left]
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        node = self.generic_visit(node)
        neutral = isinstance(node.op, ast.And)  # `and True`, `or False`
        values = [v for v in node.values if not (isinstance(v, ast.Constant) and v.value is neutral)]
        if len(values) <= 1:
            return values[0] if values else node.values[-1]
        node.values = values
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        node = self.generic_visit(node)
        truth = _truth(node.test)
        return node if truth is None else (node.body if truth else node.orelse)


def canonical_tokens(code: str, known: set[str], keep: set[str] = frozenset(), bound_own: bool = True) -> list[str]:
    """The tokens of what `code` does (module docstring, step 1): the course's names in `known` stay (unless
    the code binds them, with `bound_own`); the top-level definitions named in `keep` stay even when unused."""
    code = code[:SIMILARITY_ANSWER_CHARS]
    try:
        tree = parse(code)
        padding = Padding(tree, set(keep))
        tree = respell(tree, set(keep), _dynamic(tree), lambda stmt: padding.idle(stmt, True))
        text = ast.unparse(_Canonical(known, set(keep), tree, bound_own).visit(tree))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _tokens(code, known)
    return _tokens(text, None)
