"""The Chinese edition: language detection, translation at display time, editions, figures.

The catalog tool's own tests (units, templates, update, the rules, the per-catalog completeness test) are
beside it, in tests/tools/translate/.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from courseinfo import labels
from namedaxes import checking, i18n, plots
from tools import generate_notebooks as gen
from tools import translate

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def lang():
    """Set the language for one test; detection is restored afterwards."""
    yield i18n.set_language
    i18n.set_language(None)


def _notebook(path: Path, language: str | None = None) -> Path:
    nb = new_notebook(cells=[new_code_cell("1")])
    if language:
        nb.metadata["namedaxes"] = {"language": language}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


# ================================================================== detection
def test_environment_variable_comes_first(tmp_path):
    nb = _notebook(tmp_path / "zh" / "a.ipynb", "zh")
    assert i18n.detect_language({"NAMEDAXES_LANG": "en", "JPY_SESSION_NAME": str(nb)}, cwd=nb.parent) == "en"
    assert i18n.detect_language({"NAMEDAXES_LANG": "zh"}, cwd=tmp_path) == "zh"


def test_bad_environment_value_means_english_with_a_warning(tmp_path):
    with pytest.warns(UserWarning, match="NAMEDAXES_LANG='fr'"):
        assert i18n.detect_language({"NAMEDAXES_LANG": "fr"}, cwd=tmp_path) == "en"
    zh_setup = {"In": ["", "devices = setup_devices()  # 8 个设备"]}
    assert i18n.detect_language({"NAMEDAXES_LANG": ""}, cwd=tmp_path, user_ns=zh_setup) == "zh"  # empty: unset


def test_notebook_metadata_beats_the_folder(tmp_path):
    english_in_zh = _notebook(tmp_path / "zh" / "en.ipynb", "en")
    chinese_elsewhere = _notebook(tmp_path / "work" / "zh.ipynb", "zh")
    assert i18n.detect_language({"JPY_SESSION_NAME": str(english_in_zh)}, cwd=english_in_zh.parent) == "en"
    assert i18n.detect_language({"JPY_SESSION_NAME": str(chinese_elsewhere)}, cwd=chinese_elsewhere.parent) == "zh"
    # ipykernel's copy in the user namespace, and a server-relative path (the kernel runs in the notebook's folder)
    assert (
        i18n.detect_language({}, cwd=chinese_elsewhere.parent, user_ns={"__session__": str(chinese_elsewhere)}) == "zh"
    )
    assert i18n.detect_language({"JPY_SESSION_NAME": "some/dir/zh.ipynb"}, cwd=chinese_elsewhere.parent) == "zh"


def test_notebook_without_metadata_leaves_it_to_its_set_up_cell(tmp_path):
    plain = _notebook(tmp_path / "zh" / "plain.ipynb")
    history = {
        "In": ["", "from namedaxes import setup_devices\ndevices = setup_devices()  # 8 个设备：模拟的 CPU 设备"]
    }
    assert i18n.detect_language({"JPY_SESSION_NAME": str(plain)}, cwd=plain.parent, user_ns=history) == "zh"
    assert i18n.detect_language({"JPY_SESSION_NAME": str(plain)}, cwd=plain.parent) == "en"  # a zh folder is no rule


def test_unreadable_or_huge_notebooks_are_ignored(tmp_path, monkeypatch):
    broken = tmp_path / "x" / "broken.ipynb"
    broken.parent.mkdir()
    broken.write_text("{not json")
    assert i18n.detect_language({"JPY_SESSION_NAME": str(broken)}, cwd=broken.parent) == "en"
    big = _notebook(tmp_path / "y" / "big.ipynb", "zh")
    monkeypatch.setattr(i18n, "MAX_NOTEBOOK_BYTES", 10)
    assert i18n.detect_language({"JPY_SESSION_NAME": str(big)}, cwd=big.parent) == "en"
    odd = tmp_path / "z" / "odd.ipynb"
    odd.parent.mkdir()
    odd.write_text(json.dumps({"metadata": {"namedaxes": {"language": ["zh"]}}}))
    assert i18n.detect_language({"JPY_SESSION_NAME": str(odd)}, cwd=odd.parent) == "en"


def test_the_folder_never_decides_the_set_up_cell_does(tmp_path):
    """On Colab there is no `zh` folder and no JPY_SESSION_NAME: the set-up cell the kernel ran says the language."""
    for cwd in (tmp_path / "notebooks" / "zh", tmp_path / "zh" / "deeper", tmp_path / "notebooks"):
        assert i18n.detect_language({}, cwd=cwd) == "en"
    english = "devices = setup_devices()  # 8 devices: real accelerators when there are 8, else simulated"
    chinese = "devices = setup_devices()  # 8 个设备：有 8 个真实加速器时用它们，否则用模拟的 CPU 设备"
    assert i18n.detect_language({}, cwd=tmp_path, user_ns={"In": ["", chinese, "x = 1"]}) == "zh"
    assert i18n.detect_language({}, cwd=tmp_path, user_ns={"In": ["", english, "# 中文注释"]}) == "en"
    assert i18n.detect_language({}, cwd=tmp_path, user_ns={"In": ["", chinese, english]}) == "en"  # the last one
    assert i18n.setup_cell_language("print('设备')  # no comment in Chinese") is None  # strings are not comments
    assert i18n.setup_cell_language("x = 1  # 设备") is None  # not a set-up cell


def test_set_language_overrides_and_validates(lang):
    lang("zh")
    assert i18n.language() == "zh"
    lang("en")
    assert i18n.language() == "en"
    with pytest.raises(ValueError, match="unknown language 'de'"):
        lang("de")


# ================================================================== gettext
def test_gettext_translates_and_falls_back_to_english(lang):
    lang("zh")
    assert i18n.gettext("The check") == "检查"
    assert i18n.gettext("an English sentence nobody translated") == "an English sentence nobody translated"
    lang("en")
    assert i18n.gettext("The check") == "The check"


def test_missing_compiled_catalog_means_english(lang, monkeypatch, tmp_path):
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    monkeypatch.setattr(i18n, "_CATALOGS", {})
    lang("zh")
    assert i18n.gettext("The check") == "The check"


def test_text_tables_give_english_to_tools_and_translations_to_students(lang):
    from namedaxes.exercises import collectives

    assert isinstance(checking.TEXT, i18n.Messages) and isinstance(collectives.TEXT, i18n.Messages)
    lang("zh")
    assert checking.TEXT["the_check"] == "检查"
    assert dict(checking.TEXT.items())["the_check"] == "The check"
    assert checking.TEXT.english("not_written_yet") == checking.NOT_WRITTEN_YET


def _failure_lines(check, *args) -> list[str]:
    with pytest.raises(checking.CheckFailed) as err:
        check(*args)
    return [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in err.value._render_traceback_()]


def _stub(x, mesh):
    raise NotImplementedError()


def test_a_failing_check_speaks_chinese_and_wraps_by_width(lang):
    from namedaxes.exercises import collectives as q

    lang("en")
    english = _failure_lines(q.median_centered.check, _stub)
    assert english[0].startswith("✗ `median_centered` is not written yet")
    lang("zh")
    chinese = _failure_lines(q.median_centered.check, _stub)
    assert "还没有编写" in chinese[0] and chinese[-1] == "卡住了？运行 `q.median_centered.hint()` 获取提示。"
    message = chinese[:-1]
    assert all(sum(2 if i18n.is_wide(c) else 1 for c in line) <= 80 for line in message), message
    assert "`raise NotImplementedError()`" in "".join(message)  # a code span is never broken across lines
    # the progress list cuts the Chinese message at its first full stop or colon
    rows = dict((name, why) for name, status, why in checking.progress_rows(q.__name__))
    assert "median_centered" in rows
    assert checking.progress_list._short(checking.not_written_yet("x")) == "`x` 还没有编写"


def test_hints_are_translated_when_shown(lang, capsys, monkeypatch):
    ex = checking.Exercise("demo", lambda fn: None, hints=["Ask the named axis."], module="tests.demo")
    monkeypatch.setitem(
        i18n._CATALOGS,
        "zh",
        type("T", (), {"gettext": staticmethod(lambda m: {"Ask the named axis.": "问命名轴。"}.get(m, m))})(),
    )
    lang("zh")
    ex.hint()
    assert "问命名轴。" in capsys.readouterr().out


def test_english_check_messages_are_unchanged(lang):
    """The English texts that moved into TEXT read exactly as before (the unbound-axis message without a
    'binds only')."""
    lang("en")
    err = NameError("Found an unbound axis name: batch. To fix this, please call psum under jax.shard_map.")
    text = checking.explaining._unbound_message("f", err, "batch", None, (), None)
    assert text == (
        "`f` failed with JAX's error \"NameError: Found an unbound axis name: batch. To fix this, please "
        "call psum under jax.shard_map.\" It means: `f` calls a collective over 'batch', and no enclosing "
        "pmap/vmap/shard_map binds that name."
    )
    text = checking.explaining._unbound_message("f", err, "batch", "`pmap`", ("devices",), None)
    assert text.endswith(
        "binds that name. `pmap` binds only 'devices'. Write the axis name as the constant "
        "`DEVICES`: `axis_name=DEVICES`."
    )


# ================================================================== editions
@pytest.mark.parametrize("aid", translate.notebook_ids())
def test_editions_have_the_english_code_and_are_up_to_date(aid):
    for folder in (ROOT / "solutions", ROOT / "notebooks"):
        english = nbformat.read(folder / f"{aid}.ipynb", as_version=4)
        edition = nbformat.read(folder / "zh" / f"{aid}.ipynb", as_version=4)
        assert gen.edition_differences(english, edition) == []
        assert edition.metadata["namedaxes"] == {"language": "zh"} and "namedaxes" not in english.metadata
        expected = nbformat.writes(gen.translate_notebook(english, "zh", aid)) + "\n"
        assert (folder / "zh" / f"{aid}.ipynb").read_text(encoding="utf-8") == expected, (
            f"{folder.name}/zh/{aid}.ipynb is stale: run `make notebooks`"
        )


def test_edition_differences_catch_changed_code_and_metadata():
    english = nbformat.read(ROOT / "solutions" / "07_collectives.ipynb", as_version=4)
    edition = gen.translate_notebook(english, "zh", "07_collectives")
    assert gen.edition_differences(english, edition) == []
    code = next(i for i, c in enumerate(edition.cells) if c.cell_type == "code" and "#" in c.source)
    edition.cells[code].source += "\nx = 1"
    grade = next(i for i, c in enumerate(edition.cells) if c.metadata.get("nbgrader", {}).get("points"))
    edition.cells[grade].metadata["nbgrader"]["points"] += 1
    problems = gen.edition_differences(english, edition)
    assert any("code differs" in p for p in problems) and any("metadata" in p for p in problems)


def test_a_translated_locked_cell_gets_its_own_checksum():
    """nbgrader's Validate calls a locked cell whose checksum is not its source's "changed" (issue 19)."""
    from nbgrader.utils import compute_checksum

    english = nbformat.read(ROOT / "notebooks" / "02_scaled_sum.ipynb", as_version=4)
    edition = gen.translate_notebook(english, "zh", "02_scaled_sum")
    pairs = [(a, b) for a, b in zip(english.cells, edition.cells) if "checksum" in (a.metadata.get("nbgrader") or {})]
    assert any(a.source != b.source for a, b in pairs), "the set-up cell's comment is translated"
    assert all(b.metadata.nbgrader.checksum == compute_checksum(b) for _, b in pairs)
    assert gen.edition_differences(english, edition) == []
    stale = next(b for a, b in pairs if a.source != b.source)
    stale.metadata.nbgrader.checksum = next(a for a, b in pairs if b is stale).metadata.nbgrader.checksum
    assert any("checksum" in p for p in gen.edition_differences(english, edition))


def test_translated_notebook_07_is_chinese_prose_around_english_code():
    zh = nbformat.read(ROOT / "solutions" / "zh" / "07_collectives.ipynb", as_version=4)
    first = zh.cells[0].source
    assert first.startswith("# 07 — 工具箱的其余部分：`all_gather`") and "**学习目标**" in first
    assert "- 用 `lax.all_gather` 收集" in first  # list structure survives
    setup = next(c for c in zh.cells if c.id == "setup").source
    assert setup.endswith("devices = setup_devices()  # 8 个设备：有 8 个真实加速器时用它们，否则用模拟的 CPU 设备")


# ================================================================== figures
def test_a_chinese_figure_renders_without_missing_glyphs(lang):
    if plots.cjk_font() is None:
        pytest.skip("no CJK font installed (make system-deps installs fonts-wqy-microhei)")
    lang("zh")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = plots.plot_communication(
            plots.all_gather_steps(4, 8),
            4,
            title="lax.all_gather, ring on 4 devices (a block of 8 bytes each)",
            note="x2 = device 2's block",
        )
        png = plots.figure_png(fig)
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert any("设备" in t for t in texts), texts  # the labels really are Chinese
    assert png.startswith(b"\x89PNG")
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert not missing, missing


def test_a_chinese_figure_logs_no_font_warning(lang, caplog):
    """Notebook 03's picture of the groups printed "findfont: Failed to find font weight bold for WenQuanYi Micro
    Hei" into the Chinese notebook (matplotlib's log): its device labels are not bold in Chinese."""
    if plots.cjk_font() is None:
        pytest.skip("no CJK font installed (make system-deps installs fonts-wqy-microhei)")
    lang("zh")
    with caplog.at_level("INFO", logger="matplotlib.font_manager"):
        plots.figure_png(plots.plot_collective_groups((2, 4), ("data_shards", "model_replicas")))
    assert not [r.getMessage() for r in caplog.records if r.levelno >= 30], caplog.text
    lang("en")
    fig = plots.plot_collective_groups((2, 4), ("data_shards", "model_replicas"))
    assert any(t.get_fontweight() == "bold" for t in fig.findobj(lambda a: hasattr(a, "get_fontweight")))


def test_english_figures_stay_english(lang):
    lang("en")
    fig = plots.plot_device_values([1, 2], [3, 3], title="t")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["device 0", "device 1"]


# ================================================================== a real kernel
def test_a_chinese_notebook_copied_outside_any_zh_folder_answers_in_chinese(tmp_path):
    """Colab: the Chinese notebook 02 as a student uploads it (no zh folder, no Jupyter session path): its own
    set-up cell makes the kernel speak Chinese; the English notebook in the same folder speaks English."""
    from nbclient import NotebookClient

    outputs = {}
    for edition in ("zh", ""):
        release = nbformat.read(ROOT / "notebooks" / edition / "02_scaled_sum.ipynb", as_version=4)
        cells = [c for c in release.cells if (c.metadata.get("nbgrader") or {}).get("grade_id") in ("setup", "imports")]
        nb = new_notebook(
            cells=cells
            + [new_code_cell("from namedaxes.checking import not_written_yet\nprint(not_written_yet('scaled_sum'))")]
        )
        folder = tmp_path / ("copy-" + (edition or "en"))
        folder.mkdir()
        env_free = NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(folder)}})
        env_free.execute()
        outputs[edition or "en"] = (nb.cells[0].outputs[0]["text"], nb.cells[-1].outputs[0]["text"])
    assert outputs["zh"][0].startswith("namedaxes：8 个设备（cpu，"), outputs  # the set-up banner
    assert "`scaled_sum` 还没有编写" in outputs["zh"][1], outputs
    assert outputs["en"][0].startswith("namedaxes: 8 devices (cpu, "), outputs
    assert "`scaled_sum` is not written yet" in outputs["en"][1], outputs


# ================================================================== no English left for a Chinese student
_ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'’-]*(?:[ ,]+[A-Za-z][A-Za-z'’-]*){3,}")


def english_sentences(text: str) -> list[str]:
    """Runs of four or more English words outside what stays English: code spans, placeholders, link targets,
    URLs, quoted text (an English term glossed, an axis name, JAX's error text)."""
    text = translate.CODE_SPAN.sub(" ", text)
    text = re.sub(r"\]\([^)]*\)|https?://\S+|\{[^{}]*\}", " ", text)
    text = re.sub(r"“[^”]*”|\"[^\"]*\"|'[^'\s]*'", " ", text)
    return _ENGLISH_RUN.findall(text)


def test_english_sentences_finds_english_and_spares_code_and_quotes():
    assert english_sentences("`scaled_sum` gives every device the total.") == ["gives every device the total"]
    assert english_sentences("`scaled_sum` 把总和交给每个设备（`lax.psum(x, axis_name=DEVICES)`）。") == []
    assert english_sentences('空槽位里是 NaN（“not a number”，非数），JAX 报错 "unbound axis name: devices"。') == []


def _what_a_student_reads(nb) -> list[tuple[str, str]]:
    """(cell id, text) of everything a notebook shows a student before running it: markdown, code comments, the
    labels its code prints, and the docstring a test cell starts with."""
    out = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            out.append((cell.id, cell.source))
        elif cell.cell_type == "code":
            out += [(cell.id, text) for _, _, text in translate.comment_units(cell.source)]
            out += [(cell.id, label.text) for label in labels.labels(cell.source)]
            m = translate.DOCSTRING.match(cell.source)
            if m:
                out.append((cell.id, m.group(2)))
    return out


@pytest.mark.parametrize("folder", ["solutions/zh", "notebooks/zh"])
def test_the_chinese_notebooks_show_no_english_sentences(folder):
    problems = [
        f"{path.name} {cell}: {run!r}"
        for path in sorted((ROOT / folder).glob("*.ipynb"))
        for cell, text in _what_a_student_reads(nbformat.read(path, as_version=4))
        for run in english_sentences(text)
    ]
    assert not problems, "\n".join(problems[:30])


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_every_label_the_chinese_code_prints_is_translated(folder):
    """What `print(...)` shows in a Chinese notebook is Chinese (issue 19): no label of its code is left as the
    English prints it, unless it is only its notebook's code ("pmap:", "params['w']:")."""
    left = [
        f"{aid}: {label}"
        for aid in translate.notebook_ids()
        for label in gen.english_labels(
            nbformat.read(ROOT / folder / f"{aid}.ipynb", as_version=4),
            nbformat.read(ROOT / folder / "zh" / f"{aid}.ipynb", as_version=4),
            aid,
        )
    ]
    assert not left, "\n".join(left[:30])
    zh = nbformat.read(ROOT / folder / "zh" / "04_gradient_averaging.ipynb", as_version=4)
    assert 'print("损失:", model.loss(params, batch))' in next(c.source for c in zh.cells if c.id == "start-loss")


def test_check_notebooks_names_a_label_left_untranslated(monkeypatch):
    """`make check-notebooks` (generate_notebooks --check, through english_labels) fails on a label whose
    translation is missing, and names its cell and text; a label that is only code ("pmap:") may stay."""
    english = nbformat.read(ROOT / "solutions" / "01_axis_names.ipynb", as_version=4)
    table = translate.translations("zh", "01_axis_names")
    assert gen.english_labels(english, gen.translate_notebook(english, "zh", "01_axis_names"), "01_axis_names") == []
    gap = {k: v for k, v in table.items() if k != ("vmap-vs-pmap#output", "same numbers:")}
    assert ("vmap-vs-pmap#output", "pmap:") in gap
    monkeypatch.setattr(translate, "translations", lambda lang, name: gap)
    edition = gen.translate_notebook(english, "zh", "01_axis_names")
    assert gen.english_labels(english, edition, "01_axis_names") == ["vmap-vs-pmap: 'same numbers:'"]


def test_the_chinese_release_says_where_to_write_an_answer_in_chinese():
    """nbgrader writes `# YOUR CODE HERE` into each answer cell of the release: the Chinese release says it in
    Chinese (the catalog's unit), above the same `raise NotImplementedError()`."""
    stubs = 0
    for path in sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")):
        said = translate.translations("zh", path.stem)[(translate.STUB_CONTEXT, translate.STUB_COMMENT)]
        for cell in nbformat.read(path, as_version=4).cells:
            if (cell.metadata.get("nbgrader") or {}).get("solution"):
                assert translate.STUB_COMMENT not in cell.source, (path.name, cell.source)
                assert f"# {said}\n" in cell.source and "raise NotImplementedError()" in cell.source, cell.source
                stubs += 1
    assert stubs >= 26 and said == "在这里写你的代码"


def test_an_edition_whose_label_changed_its_code_differs():
    english = nbformat.read(ROOT / "solutions" / "04_gradient_averaging.ipynb", as_version=4)
    edition = gen.translate_notebook(english, "zh", "04_gradient_averaging")
    assert gen.edition_differences(english, edition) == []
    cell = next(c for c in edition.cells if c.id == "p-update-step")
    assert "这一步之前的损失: {float(start_loss):.4f}" in cell.source
    cell.source = cell.source.replace("{float(start_loss):.4f}", "{float(start_loss):.2f}")
    from nbgrader.utils import compute_checksum

    if "checksum" in (cell.metadata.get("nbgrader") or {}):
        cell.metadata.nbgrader.checksum = compute_checksum(cell)
    assert any("code differs" in p for p in gen.edition_differences(english, edition))


def test_every_chinese_message_is_chinese():
    """The messages a student sees while running a Chinese notebook (TEXT tables, hints, figure labels, the
    grader's feedback): their translations have no English sentence outside code spans and placeholders."""
    problems = [
        f"{m.id[:50]!r} -> {run!r}"
        for m in translate.load_catalog("zh", translate.DOMAIN)
        if m.id and m.string
        for run in english_sentences(m.string)
    ]
    assert not problems, "\n".join(problems[:30])


def test_the_set_up_messages_speak_chinese(lang):
    """The set-up cell's banner and DeviceSetupError are TEXT templates (namedaxes/devices.py), list separators too."""
    from namedaxes import devices

    lang("zh")
    banner = devices.TEXT["banner"].format(
        n=8, platform="cpu", how=devices.TEXT["how_simulated"], ids=devices.TEXT["id_sep"].join("0123")
    )
    assert banner == "namedaxes：8 个设备（cpu，在 CPU 上模拟）：0、1、2、3"
    error = devices.TEXT["too_few_devices"].format(count=1, platform="cpu")
    assert error.startswith("JAX 已经在用 1 个设备（cpu）运行") and not english_sentences(error)
    assert checking.TEXT["list_sep"] == "、"


def test_the_multi_process_helpers_errors_speak_chinese(lang):
    """What `ship` refuses and how a worker failed reach the student in the notebook's language: a ShipError is
    inserted into notebook 06's message whole, so it must be Chinese too."""
    from namedaxes import multiprocess
    from namedaxes.exercises import multi_process

    lang("zh")
    with pytest.raises(multiprocess.ShipError) as err:
        multiprocess.ship(lambda x: x)
    message = multi_process.TEXT["cannot_ship"].format(name="local_rows", error=err.value)  # as _rules composes it
    assert message.startswith("`local_rows` 无法发送到工作进程：`<lambda>` 是一个 lambda：请用 `def` 定义它"), message
    assert not english_sentences(message) and message.endswith("。"), message
    said = multiprocess.TEXT["raised_too"].format(
        i=0,
        n=2,
        error="ValueError: x",
        what=multiprocess.TEXT["running"].format(name="job"),
        others=multiprocess.cluster._processes([1, 2]),
    )
    assert said == "进程 0（共 2 个）抛出了 ValueError: x（进程 1、2 也抛出了错误）\n（在运行 `job` 的过程中）"
    lang("en")
    assert multiprocess.cluster._processes([1, 2]) == "processes 1, 2"


def test_print_cluster_speaks_the_notebooks_language(lang):
    """Notebook 06 prints its cluster: the Chinese edition showed "<Cluster 2 processes x 4 devices, running, ...>"."""
    from namedaxes import multiprocess

    cluster = multiprocess.Cluster(2, 4)
    lang("zh")
    assert str(cluster) == "<Cluster：2 个进程 × 4 个设备，未启动>"
    cluster.port, cluster.host = 5000, "127.0.0.1"
    assert str(cluster).endswith("，协调者 127.0.0.1:5000>") and not english_sentences(str(cluster))
    lang("en")
    assert str(cluster) == "<Cluster: 2 processes x 4 devices, not started, coordinator 127.0.0.1:5000>"
    assert repr(cluster) == "<Cluster 2 processes x 4 devices, not started, coordinator 127.0.0.1:5000>"


def test_a_chinese_message_with_an_appended_sentence_has_no_space_after_its_full_stop(lang):
    """Notebook 07's check of a `median_centered` that returns the whole vector appends the sentence " That is
    the whole vector ..." to the shape message: in Chinese it follows the full stop directly (fail() composes)."""
    from namedaxes.exercises import collectives as q
    from tests.namedaxes.exercises.test_collectives import MEDIAN_WRONG

    lang("zh")
    message = checking.assert_check_fails(q.median_centered.check, MEDIAN_WRONG["whole matrix from every device"][0])
    assert "这是整个矩阵" in message and "。这是整个矩阵" in message, message
    assert not re.search(r"[，。：；？！、）] ", message), message
    with pytest.raises(checking.CheckFailed) as err:
        checking.fail("`x` 不对。 这是整个向量：见下。")
    assert str(err.value) == "`x` 不对。这是整个向量：见下。"
    with pytest.raises(checking.CheckFailed) as err:
        checking.fail('`x` 失败了，JAX 报错 "unbound axis name: devices."。请绑定它。')
    assert str(err.value) == '`x` 失败了，JAX 报错 "unbound axis name: devices"。请绑定它。'
    with pytest.raises(checking.CheckFailed) as err:
        checking.fail("`x` is wrong. That is the whole vector: see below.")
    assert str(err.value) == "`x` is wrong. That is the whole vector: see below."  # English: as given


# ================================================================== "How it is graded"
def _sentences(text: str) -> int:
    text = translate.CODE_SPAN.sub("code", text)
    return len(re.findall(r"[.!?](?=\s|$)|[。！？]", text))


@pytest.mark.parametrize("edition", ["", "zh"], ids=["en", "zh"])
def test_how_it_is_graded_is_short_and_out_of_the_way_of_the_answer(edition):
    """Each exercise's grading note is a markdown cell of its own, at most three sentences, after the test cells
    that check the answer (not between the exercise and the answer cell), in both editions (issue 19)."""
    marker = "*如何评分*" if edition else "*How it is graded:*"
    found = 0
    for path in sorted((ROOT / "solutions" / edition).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "markdown" or marker not in cell.source:
                continue
            found += 1
            assert cell.source.startswith(marker) and "\n\n" not in cell.source, (path.name, cell.id)
            assert _sentences(cell.source) <= 3, (path.name, cell.id, cell.source)
            before = nb.cells[i - 1].metadata.get("nbgrader") or {}
            assert before.get("grade") and not before.get("solution"), (path.name, cell.id, "not after a test cell")
    assert found >= 22  # 01-06 have 22; a new notebook adds its own
