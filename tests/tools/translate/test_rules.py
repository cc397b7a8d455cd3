"""The rules of one translated entry: consistency, glossary terms, punctuation (tools/translate/rules.py)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from tools import translate

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "msgstr, problem",
    [
        ("`{name}` 没有 hint", None),
        ("没有 hint", "code spans differ"),
        ("`{name}` 的 {x}", "placeholders differ"),
        ("`{nom}` 看 [这里](b.md)", "placeholders differ"),
        ("`{name}` 看 [这里](b.md)", "link targets differ"),
    ],
)
def test_translations_must_keep_placeholders_code_and_links(msgstr, problem):
    problems = translate.consistency_problems("`{name}` has no hint, see [here](a.md)", msgstr)
    if problem is None:
        assert all("link" in p for p in problems)  # only the link target differs in this row
    else:
        assert any(problem in p for p in problems), problems


def _glossary() -> list[dict]:
    with open(ROOT / "locale" / "zh" / "glossary.tsv", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh, delimiter="\t") if r and not r[0].startswith("#")]
    return [{"en": r[0], "zh": r[1], "note": r[2] if len(r) > 2 else ""} for r in rows]


def test_glossary_lists_every_term_once_and_has_the_issue_terms():
    rows = _glossary()
    terms = [r["en"].lower() for r in rows]
    assert len(terms) == len(set(terms)), [t for t in terms if terms.count(t) > 1]
    assert all(r["zh"] for r in rows)
    issue = {
        "axis name": "轴名称",
        "collective": "集合通信操作",
        "device": "设备",
        "shard": "分片",
        "gradient averaging": "梯度平均",
        "mapped axis": "映射轴",
        "mesh": "网格",
    }
    assert {r["en"]: r["zh"] for r in rows if r["en"] in issue} == issue
    source = ROOT.parent / "shared" / "source-material" / "glossary.zh.md"
    if source.exists():  # every term of the source tutorial's glossary is in ours
        for line in source.read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if line.startswith("|") and len(cells) >= 2 and not set(cells[0]) <= {"-"} and cells[0] != "English":
                first = re.split(r" / | \(", cells[0])[0].strip().lower()
                assert first in terms, f"glossary.zh.md term {cells[0]!r} is missing from glossary.tsv"


def test_glossary_check_finds_a_wrong_term():
    terms = translate.glossary("zh")
    assert translate.glossary_problems("Every device holds the mesh.", "每个设备都持有网格。", terms) == []
    assert translate.glossary_problems("Every device holds the mesh.", "每个装置都持有网格。", terms) == [
        "glossary: 'device' is '设备', not used in '每个装置都持有网格。'"
    ]
    # code, constants and quoted axis names are not prose
    assert (
        translate.glossary_problems(
            "Use `mesh` and DEVICES over 'devices'.", "用 `mesh`、DEVICES 和 'devices'。", terms
        )
        == []
    )


@pytest.mark.parametrize(
    "msgid, msgstr, problem",
    [
        ("Every entry is 1.", "每个条目都是 1。", "not '条目'"),  # array entries: 元素 / 项
        ("Every entry is 1.", "每个元素都是 1。", None),
        ("Entry i is the sum.", "第 i 项是和。", None),
        ("As in notebook 05.", "与 notebook 05 一样。", "not 'notebook'"),
        ("As in notebook 05.", "与笔记本 05 一样。", None),
        ("Use the `nb` notebook.", "使用 `nb` 笔记本。", None),
        ("The empty slots are NaN.", "空位是 NaN。", "not '空位'"),  # 位置 is axis_index's word
        ("The empty slots are NaN.", "空槽位是 NaN。", None),
        ("Use the spec above.", "用上面的 spec。", "not 'spec'"),
        ("Use the spec above, `in_specs`.", "用上面的分区规范，`in_specs`。", None),
        ("Give the axis a name.", "给轴起个名字。", "not '名字'"),
        ("`out_specs` names every axis.", "`out_specs` 列出每个轴。", None),  # the verb: optional
    ],
)
def test_glossary_enforces_the_issue_19_terms(msgid, msgstr, problem):
    problems = translate.glossary_problems(msgid, msgstr, translate.glossary("zh"))
    assert (problems == []) if problem is None else any(problem in p for p in problems), problems


@pytest.mark.parametrize(
    "msgid, msgstr, problem",
    [
        ("These idle stage-steps are the bubble.", "这些空闲的“阶段 × 步”就是气泡。", "not '阶段 × 步'"),
        ("These idle stage-steps are the bubble.", "这些空闲的阶段-步就是气泡。", None),
        ("hands the activations on", "把激活传下去", "not used"),
        ("hands the activations on", "把激活值传下去", None),
        ("the activation belongs to the gate", "激活函数属于 gate", None),
        ("the lowered program", "降级后的程序", "not '降级'"),
        ("the lowered program", "下降后的程序", None),
        ("(lowering is quick)", "（lowering 很快）", "not 'lowering'"),
        ("its gradient returns **unreduced**", "它的梯度返回时是 **unreduced**", "not 'unreduced'"),
        ("its gradient returns **unreduced**", "它的梯度返回时是**未归约**的", None),
        ("marked **reduced**", "标记为 **reduced**", "not 'reduced'"),
        ("marked **reduced**, `P(reduced={ZERO})`", "标记为**已归约**，`P(reduced={ZERO})`", None),
        ("mixed precision keeps master weights", "混合精度保留主权重", None),
        ("mixed precision keeps master weights", "混合精度保留 master 权重", "'master weights' is '主权重'"),
        ("ZeRO stage 2", "ZeRO 阶段 2", None),
        ("pad with zeros", "补零", None),  # ZeRO is matched in its own case only: zeros are no ZeRO
        ("gradient accumulation", "梯度累加", "'gradient accumulation' is '梯度累积'"),
        ("Read a profile", "阅读一个性能剖析", None),
        ("the Hugging Face playbook", "Hugging Face 的 playbook", "'playbook' is '手册'"),
        ("the Hugging Face *Ultra-Scale Playbook*", "Hugging Face 的 *Ultra-Scale Playbook* 手册", None),
    ],
)
def test_glossary_enforces_one_term_per_idea_across_09_to_11(msgid, msgstr, problem):
    """Issue 61: the terms 09-11 rendered two ways (阶段 × 步 and 阶段-步, 激活 and 激活值, 降级 for "lowered", bold
    English **reduced**), now each one way, and the catalog check enforces it."""
    problems = translate.glossary_problems(msgid, msgstr, translate.glossary("zh"))
    assert (problems == []) if problem is None else any(problem in p for p in problems), problems


@pytest.mark.parametrize(
    "msgstr, problem",
    [
        ("它失败了。 请检查。", "a space after full-width punctuation"),
        ('JAX 报错 "bad."。', "a Latin sentence end"),
        ("它失败了.。", "a Latin sentence end"),
        ("它失败了。。", "a doubled full stop"),
        ("它失败了。请检查 `x.`。", None),  # code spans are not prose
        ("It failed. Check.", None),  # not Chinese: not these rules
    ],
)
def test_punctuation_check_of_a_chinese_translation(msgstr, problem):
    problems = translate.punctuation_problems("x", msgstr)
    assert (problems == []) if problem is None else any(problem in p for p in problems), problems
