"""A code label's translation: English left, or not fitting its literal, is refused (tools/translate/label_units.py)."""

from __future__ import annotations

from tools import translate


def test_a_label_left_english_or_not_fitting_its_literal_is_refused_by_the_catalog_check():
    allowed = translate.code_words("08_compiler_sharding")
    assert {"all-gather", "matmul", "jax", "checkpoint", "rows"} <= allowed  # code, and the HLO ops it compares
    assert translate.label_problems("all-gather version:", "all-gather 版本:", allowed) == []
    assert translate.label_problems("rows:", "rows:", allowed) == []  # a variable's name stays
    assert "English left" in translate.label_problems("result layout:", "结果的 layout:", allowed)[0]
    assert "English left" in translate.label_problems("holds rows and columns", "holds rows and columns", allowed)[0]
    assert "Latin ':'" in translate.label_problems("result layout:", "结果的布局：", allowed)[0]
    assert "fields differ" in translate.label_problems("out {spec}: {x}", "输出 {spec}:", allowed)[0]
    assert "would end the literal" in translate.label_problems("result:", '"结果":', allowed)[0]
