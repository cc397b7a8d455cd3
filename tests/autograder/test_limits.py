"""Every cap in one table: `autograder/limits.py` defines each bound once, says what it bounds, and
the module it names really takes it from there (and no module restates a cap as a literal)."""

from __future__ import annotations

import ast
from pathlib import Path

from autograder import limits

PKG = Path(__file__).resolve().parents[2] / "autograder"


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level NAME = value and NAME: type = value, upper-case and public."""
    found = {}
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for t in targets:
            if isinstance(t, ast.Name) and t.id.isupper() and not t.id.startswith("_") and node.value is not None:
                found[t.id] = node.value
    return found


def _from_limits(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "limits" and node.level:
            names |= {a.name for a in node.names}
    return names


def test_the_table_describes_every_cap_and_only_caps():
    defined = set(_constants(ast.parse((PKG / "limits.py").read_text(encoding="utf-8")))) - {"TABLE"}
    assert defined == set(limits.TABLE), (sorted(defined - set(limits.TABLE)), sorted(set(limits.TABLE) - defined))
    for name, cap in limits.TABLE.items():
        value = getattr(limits, name)
        assert isinstance(value, (int, float)) and value > 0, (name, value)
        assert cap.unit and cap.where and cap.what, name
        assert name in limits.__all__, name


def test_each_cap_is_taken_from_the_table_where_the_table_says():
    wrong = [
        f"{name}: {cap.where} does not import it from autograder/limits.py"
        for name, cap in limits.TABLE.items()
        if name not in _from_limits(PKG / cap.where)
    ]
    assert not wrong, "\n".join(wrong)


def test_no_module_restates_a_cap():
    restated = []
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "limits.py":
            continue
        for name, value in _constants(ast.parse(path.read_text(encoding="utf-8"))).items():
            literal = isinstance(value, (ast.Constant, ast.BinOp)) and not isinstance(getattr(value, "value", 0), str)
            if literal and (name in limits.TABLE or name.startswith("MAX_")):
                restated.append(f"{path.relative_to(PKG)}: {name}")
    assert not restated, "caps defined outside autograder/limits.py:\n  " + "\n  ".join(restated)
