"""`namedaxes.checking.exercise`: explicit binding, and the kind of failure a check records."""

import ast
import importlib
import linecache
import pkgutil
from pathlib import Path

import numpy as np
import pytest
from checking_helpers import fresh_module

import namedaxes
import namedaxes.exercises
from namedaxes import checking
from namedaxes.checking import (
    TEXT,
    CheckFailed,
    Exercise,
    NotAttempted,
    exercises_for,
    expect_close,
    progress,
    progress_rows,
    registry,
)

PACKAGE = Path(namedaxes.__file__).parent


def _stub(name: str, number: int):
    """A function defined in a notebook cell whose body is still the stub."""
    source = f"def {name}(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
    filename = f"<ipython-input-{number}-feedc0de>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


@pytest.fixture
def module(monkeypatch):
    name = "tests.fake_exercises_not_attempted"
    monkeypatch.setitem(registry._REGISTRY, name, {})
    monkeypatch.setenv("NO_COLOR", "1")
    return name


def test_exercises_for_binds_the_module_it_is_given(module):
    exercise = exercises_for(module)
    twice = exercise("twice", lambda f: expect_close("twice", f(1.0), 2.0), hints=["multiply"])
    assert isinstance(twice, Exercise) and twice.module == module
    assert [ex.name for ex in registry._REGISTRY[module].values()] == ["twice"]


def test_an_exercise_must_name_its_module():
    with pytest.raises(TypeError, match="module"):
        Exercise("twice", lambda f: None)


def test_nothing_in_namedaxes_inspects_the_callers_frame():
    """Explicit binding: no `sys._getframe`, `inspect.currentframe`/`stack` or `f_globals` in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value.id if isinstance(node.value, ast.Name) else ""
            if node.attr in ("_getframe", "f_globals", "f_back") or (
                owner == "inspect" and node.attr in ("currentframe", "stack", "getouterframes")
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {owner}.{node.attr}")
    assert not found, found


def _makers(notebook) -> list:
    """The modules of a notebook that make its exercises: the module itself, or its package's modules."""
    if not hasattr(notebook, "__path__"):
        return [notebook]
    subs = [importlib.import_module(f"{notebook.__name__}.{i.name}") for i in pkgutil.iter_modules(notebook.__path__)]
    return [m for m in subs if "exercise" in vars(m)]


def _shown(module) -> list:
    """What a module's face shows (a notebook's package shows its check modules' names lazily: `lazy_face`)."""
    return [getattr(module, name) for name in dir(module)]


def test_every_exercise_module_binds_itself_explicitly():
    """Each notebook's exercises name the notebook (a module, or a package whose modules each make their
    exercises with its one maker, `running.exercise = exercises_for(__package__, text)`, bound to its text.py),
    and its TEXT is a Messages table.
    A module that made an exercise of another notebook module would have to show it on that module's face
    (`q.`), so its progress list and hints name it."""
    for info in pkgutil.iter_modules(namedaxes.exercises.__path__):
        mod = importlib.import_module(f"namedaxes.exercises.{info.name}")
        exercises = [v for v in _shown(mod) if isinstance(v, Exercise)]
        if not exercises:
            continue
        (notebook,) = {ex.module for ex in exercises}
        if notebook != mod.__name__:
            face = _shown(importlib.import_module(notebook))
            assert all(any(v is ex for v in face) for ex in exercises), f"{notebook} does not show {mod.__name__}'s"
        assert isinstance(mod.TEXT, namedaxes.i18n.Messages), f"{mod.__name__}.TEXT is not a Messages table"
        makers = _makers(mod)
        assert makers, mod.__name__
        running = importlib.import_module(f"{notebook}.running")
        assert running.text is importlib.import_module(f"{notebook}.text"), mod.__name__
        assert all(m.exercise is running.exercise for m in makers), mod.__name__


def test_a_stub_answer_is_not_attempted_and_progress_says_not_started(module, capsys):
    exercise = exercises_for(module)
    twice = exercise("twice", lambda f: expect_close("twice", f(1.0), 2.0), hints=["multiply"])
    thrice = exercise("thrice", lambda f: expect_close("thrice", f(1.0), 3.0))
    with pytest.raises(NotAttempted) as err:
        twice.check(_stub("twice", 31))
    assert str(err.value).startswith("`twice` is not written yet: replace `raise NotImplementedError()`")
    assert err.value.hint_line  # a not-started answer gets the hint line too
    with pytest.raises(CheckFailed) as wrong:
        thrice.check(lambda x: x)
    assert type(wrong.value) is CheckFailed  # wrong is not "not started"
    rows = progress_rows(module)
    assert [r[:2] for r in rows] == [("twice", "not_attempted"), ("thrice", "failed")]
    capsys.readouterr()
    progress(module)
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "  " + TEXT["progress_not_attempted"].format(name="twice")
    assert out[1] == "  • twice: not started yet; write its answer cell, run it, then its test cell"
    assert out[2].startswith("  ✗ thrice: `thrice` has the wrong values")


def test_an_answer_that_calls_an_unwritten_helper_is_not_attempted_either(module):
    helper = _stub("loss_fn", 32)
    exercise = exercises_for(module)
    grads = exercise("grads", lambda f: expect_close("grads", f(1.0), 2.0))
    with pytest.raises(NotAttempted, match=r"`grads` \(or a function it calls, such as `loss_fn`\) is not written"):
        grads.check(lambda x: 2 * helper(x))


def test_a_library_not_implemented_error_is_a_crash_not_a_stub(module):
    def uses_a_missing_feature(x):
        raise NotImplementedError("sparse arrays are not supported")

    exercise = exercises_for(module)
    f = exercise("f", lambda fn: fn(1.0))
    with pytest.raises(NotImplementedError, match="sparse"):  # not translated: raised outside the cell
        f.check(uses_a_missing_feature)
    assert progress_rows(module)[0][:2] == ("f", "failed")


def test_in_a_graded_kernel_a_check_only_exports_and_leaves_the_values_to_the_judge(module, monkeypatch, capsys):
    """The grader's kernel prelude sets NAMEDAXES_JUDGED_OUTSIDE (issue 46): a wrong answer is not judged in
    the kernel (the judge decides it outside, on hidden inputs), an unwritten one is still "not written yet", one
    that crashes while exporting still fails with its message, and the progress list says who judges."""
    ran = []

    def rules(f):
        ran.append(f)
        expect_close("twice", f(1.0), 2.0)

    exercise = exercises_for(module)
    twice = exercise("twice", rules, observe=lambda f: {"out": np.asarray(f(3.0))})
    with pytest.raises(CheckFailed):  # a student's own notebook: the check judges
        twice.check(lambda x: x)
    monkeypatch.setenv("NAMEDAXES_JUDGED_OUTSIDE", "1")
    ran.clear()
    twice.check(lambda x: x)  # wrong, but only its export runs here
    assert ran == [] and "• `twice` runs and exports." in capsys.readouterr().out
    assert progress_rows(module) == [("twice", "judged", "")]
    progress(module)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 of 1 exercises run and export; the grader judges them on hidden inputs"
    assert out[1] == "  • twice: judged by the grader, on hidden inputs"
    with pytest.raises(NotAttempted, match="`twice` is not written yet"):
        twice.check(_stub("twice", 33))

    def crashes(x):
        raise ValueError("no such axis")

    with pytest.raises(ValueError, match="no such axis"):
        twice.check(crashes)
    assert progress_rows(module)[0][:2] == ("twice", "failed") and ran == []
    monkeypatch.setenv("NAMEDAXES_JUDGED_OUTSIDE", "0")  # only the prelude's "1" means a graded kernel
    with pytest.raises(CheckFailed):
        twice.check(lambda x: x)


def test_exercise_check_hint_and_observe(capsys):
    ex = Exercise(
        "twice",
        lambda f: expect_close("twice", f(1.0), 2.0),
        hints=["multiply", "by two"],
        observe=lambda f: {"out": np.asarray(f(3.0))},
        module=__name__,
    )
    ex.check(lambda x: 2 * x)
    with pytest.raises(CheckFailed):
        ex.check(lambda x: x)
    for _ in range(3):
        ex.hint()
    out = capsys.readouterr().out
    assert "✓ `twice` passes the visible checks." in out and "Hint 1/2" in out and out.count("Hint 2/2") == 2
    assert float(ex.observe(lambda x: 2 * x)["out"]) == 6.0


def test_reimporting_a_module_replaces_its_exercises(monkeypatch):
    module = "tests.fake_exercises_reimport"
    fresh_module(module, monkeypatch)
    registry = checking.registry._REGISTRY[module]
    before = list(registry)
    for old in list(registry.values()):  # the same exercises defined again (same name, same check)
        Exercise(old.name, old._check, module=module)
    assert list(checking.registry._REGISTRY[module]) == before


# ---------------------------------------------------------------- known mistakes (issue 48)
def _exercises_with_mistakes() -> list:
    import sys

    found = []
    for info in pkgutil.walk_packages(namedaxes.exercises.__path__, "namedaxes.exercises."):
        module = importlib.import_module(info.name)
        found += [v for v in _shown(module) if isinstance(v, Exercise) and v.mistakes and v.module == info.name]
    named = {"axis_names", "scaled_sum", "nested_axes", "gradient_averaging", "shard_map", "multi_process"}
    named |= {"collectives", "compiler_sharding", "large_models", "training_at_scale", "step_anatomy"}
    assert {e.module for e in found} == {f"namedaxes.exercises.{m}" for m in named}
    return [(e, sys.modules[e.module]) for e in found]


def test_every_known_mistake_is_a_sentence_of_its_modules_text_with_a_hint_and_a_results_list():
    """What the misconception map and the judge rely on: each declared mistake has the check's sentence (a key
    of the module's TEXT, the exercise's module or its package's text.py), a hint number of the exercise's
    hints, and the module lists the mistakes' results (`known_mistakes(exercise, case, inputs)`)."""
    from autograder.publish.course_hints import mistakes_of

    for exercise, module in _exercises_with_mistakes():
        package = module.__name__.rsplit(".", 1)[0] if not hasattr(module, "TEXT") else module.__name__
        text = importlib.import_module(package).TEXT
        for key, number in exercise.mistakes.items():
            assert key in text, (exercise.name, key)
            assert 1 <= number <= len(exercise._hints), (exercise.name, key, number)
        # the results' list: the programs' judge asks `known_mistakes` (or `program_mistakes`: what a program shows
        # in its own text), the formulas' `mistakes_on` (the grader's solution answers compute a formula's mistakes
        # on the run's cases)
        listed = ("known_mistakes", "program_mistakes", "mistakes_on")
        assert any(callable(getattr(module, n, None)) for n in listed), module
        # the map reads the declaration from the source (a dict written out): the same as the exercise's
        assert mistakes_of(module.__name__.rsplit(".", 1)[1])[exercise.name] == exercise.mistakes, exercise.name


def test_observe_names_the_exercise_whose_mistakes_the_judge_may_ask_about(monkeypatch):
    from namedaxes.grading import MISTAKES_KEY, PROGRAMS_KEY

    module = "namedaxes.exercises.fake_mistakes"
    monkeypatch.setitem(checking.registry._REGISTRY, module, {})
    made = Exercise(
        "f", lambda fn: None, observe=lambda fn: {PROGRAMS_KEY: {"format": "x"}}, module=module, mistakes={"m": 1}
    )
    plain = Exercise("g", lambda fn: None, observe=lambda fn: {PROGRAMS_KEY: {"format": "x"}}, module=module)
    assert made.observe(None)[PROGRAMS_KEY] == {"format": "x", MISTAKES_KEY: {"module": module, "exercise": "f"}}
    assert plain.observe(None)[PROGRAMS_KEY] == {"format": "x"}
