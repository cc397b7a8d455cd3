"""namedaxes.labels: which string literals of a code cell a student sees, and how an edition replaces them."""

from __future__ import annotations

import pytest

from courseinfo import labels

CELL = """%matplotlib inline
x = f(1)  # a comment
print("loss before:", x, "| after:", y)
print(f"{n} devices: {x:.3f}  expected {jnp.sum(y * 2.0)}")
print(f"after {k} steps: w = {w['w']:.3f}"
      f"   (the data lie on w = 2.0)")
print("\\n  ".join(lines), " | ", "->")
assert ok, "the compiled step should contain an all-reduce"
for label, a in zip(["same data shard", "whole grid"], rows):
    print(f"{label}:\\n{a}")
choices = {"split by rows": 1, "split by columns": 2}
seen = {}
for name, spec in choices.items():
    seen[name] = spec
    print(name, seen[name])
for name in ("w1", "w2"):
    print(name, "stays", params[name])
s = "not a label"
"""


def test_the_labels_of_a_cell_are_its_printed_literals_asserts_and_printed_loop_labels():
    found = [(label.kind, label.prefix, label.text) for label in labels.labels(CELL)]
    assert found == [
        ("print", "", "loss before:"),
        ("print", "", "| after:"),
        ("print", "f", "{n} devices: {x:.3f}  expected {jnp.sum(y * 2.0)}"),
        ("print", "f", "after {k} steps: w = {w['w']:.3f}   (the data lie on w = 2.0)"),  # one sentence
        ("assert", "", "the compiled step should contain an all-reduce"),
        ("loop label", "", "same data shard"),
        ("loop label", "", "whole grid"),
        ("loop label", "", "split by rows"),
        ("loop label", "", "split by columns"),
        ("print", "", "stays"),
    ]
    # not labels: a separator without words, "\n  ".join's separator, a loop variable used as data
    # (params[name]: "w1" is a key), a literal nothing prints, a comment
    texts = {label.text for label in labels.labels(CELL)}
    assert not texts & {" | ", "->", "\\n  ", "w1", "w2", "not a label", "a comment"}


def test_a_loop_label_bound_to_a_name_used_elsewhere_is_data():
    source = 'names = {"first row": 1}\nfor k, v in names.items():\n    print(k, v)\nprint(names["first row"])\n'
    assert labels.labels(source) == [], "translating the key would break names['first row']"


def test_render_replaces_the_words_and_keeps_the_code():
    table = {
        "loss before:": "训练前的损失:",
        "| after:": "| 之后:",
        "{n} devices: {x:.3f}  expected {jnp.sum(y * 2.0)}": "{n} 个设备: {x:.3f}  期望 {jnp.sum(y * 2.0)}",
        "after {k} steps: w = {w['w']:.3f}   (the data lie on w = 2.0)": (
            "{k} 步之后: w = {w['w']:.3f}   （数据来自 w = 2.0）"
        ),
        "same data shard": "同一数据分片",
        "split by rows": "按行切分",
        "stays": "保持为",
    }
    out = labels.render(CELL, lambda t: table.get(t, t))
    assert 'print("训练前的损失:", x, "| 之后:", y)' in out
    assert "print(f\"{k} 步之后: w = {w['w']:.3f}   （数据来自 w = 2.0）\")" in out  # two pieces became one
    assert 'zip(["同一数据分片", "whole grid"], rows)' in out and '{"按行切分": 1, "split by columns": 2}' in out
    assert out.splitlines()[0] == "%matplotlib inline" and "# a comment" in out
    assert labels.canonical(out) == labels.canonical(CELL)
    assert labels.canonical(out.replace("{x:.3f}  期望", "{x:.4f}  期望")) != labels.canonical(CELL), (
        "an f-string's fields are code"
    )
    assert labels.canonical(out.replace("params[name]", "params[0]")) != labels.canonical(CELL)


def test_positions_count_characters_not_bytes():
    source = 'y = "→ 箭头"; print("value:", y)\nprint("second label", 1)'
    out = labels.render(source, {"value:": "值:", "second label": "第二个标签"}.get)
    assert out == 'y = "→ 箭头"; print("值:", y)\nprint("第二个标签", 1)'
    again = labels.render(out, lambda t: t)
    assert again == out and labels.canonical(out) == labels.canonical(source)


@pytest.mark.parametrize(
    "translation, problem",
    [
        ("{n} 个设备: {x:.3f}", None),
        ("{n} 个设备: {x}", "fields differ"),
        ("个设备: {x:.3f}", "fields differ"),
        ("{n} 个设备: {x:.3f} {y}", "fields differ"),
        ("{n} 个设备:\\t{x:.3f}", "escapes differ"),
        ('{n} 个"设备": {x:.3f}', "would end the literal"),
        ("{n} 个设备:\n{x:.3f}", "line break"),
    ],
)
def test_a_translation_must_fit_its_literal(translation, problem):
    problems = labels.translation_problems("{n} devices: {x:.3f}", translation, '"', True)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems
        source = 'print(f"{n} devices: {x:.3f}")'
        assert labels.render(source, lambda t: translation) == source, "a misfit translation stays English"


def test_escapes_and_plain_braces_of_a_plain_string():
    assert labels.translation_problems("column means:\\n", "列均值:\\n") == []
    assert labels.translation_problems("column means:\\n", "列均值:") != []
    assert labels.fields("{a} {{not a field}} {b[1]:>{w}}") == {"{a}": 1, "{b[1]:>{w}}": 1}


def test_a_cell_that_is_not_python_has_no_labels():
    assert labels.labels("print('unclosed") == [] and labels.canonical("print('unclosed") == "print('unclosed"


FIGURE_CELL = """plots.plot_communication(steps, 4, title="lax.all_gather, ring on 4 devices",
                         note="x2 = device 2's block")
plot_device_values(a, b, title='psum over devices', before_label="before", after_label=f"after {n}")
other(title="not a figure")
"""


def test_figure_labels_are_the_text_arguments_of_plot_calls():
    """Issue 35: the Chinese notebooks' plot code said title="..." in English while the figure was Chinese."""
    found = [(label.text, label.kind) for label in labels.figure_labels(FIGURE_CELL)]
    assert found == [
        ("lax.all_gather, ring on 4 devices", "figure"),
        ("x2 = device 2's block", "figure"),
        ("psum over devices", "figure"),
        ("before", "figure"),
    ], found  # an f-string argument and another function's title= are no figure labels
    zh = {
        "lax.all_gather, ring on 4 devices": "lax.all_gather，4 个设备上的环",
        "before": "之前",
        "psum over devices": "设备上的 'psum'",  # its quote would end the literal: kept English
    }
    out = labels.render_figures(FIGURE_CELL, lambda t: zh.get(t, t))
    assert 'title="lax.all_gather，4 个设备上的环"' in out and 'before_label="之前"' in out
    assert "title='psum over devices'" in out, "a translation that cannot stand in the literal is not written"
    assert labels.canonical(out) == labels.canonical(FIGURE_CELL), "editions differ only in their figures' words"
    assert labels.canonical(out.replace("steps, 4", "steps, 8")) != labels.canonical(FIGURE_CELL)
