"""tools/nbgrader_zh.py: the Chinese copy of nbgrader's lab extension (the browser test: tests/browser/test_lab.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from tools import nbgrader_zh as z


def test_every_msgid_is_in_the_installed_extension_and_translated():
    table = z.catalog()
    assert {"Validate", "Validation Results", "Assignment List", "Released assignments", "Fetch"} <= set(table)
    files, replaced = z.translated_files(z.installed(), table)  # raises, naming them, if a msgid is gone
    assert any(name.startswith("remoteEntry.") for name in replaced)
    chunk = next(text for rel, text in files.items() if rel.startswith("static/161."))
    assert 'title:"验证结果"' in chunk and 'label:"验证"' in chunk and "\\n        已发布的作业\\n" in chunk


def test_only_whole_strings_are_replaced():
    table = {"Fetch": "获取", "Fetch Feedback": "获取反馈", "Cannot validate:": "无法验证："}
    table["(view feedback)"] = "（查看反馈）"
    js = (
        't.innerText="Fetch",u.innerText="Fetch Feedback",x.fetchFetch="Fetchy",'
        "b=`Cannot validate: ${e}`,v=\" (view feedback)\",h='<div> Fetch </div>\\n        Fetch\\n'"
    )
    out, counts = z.translated_source(js, table)
    assert out == (
        't.innerText="获取",u.innerText="获取反馈",x.fetchFetch="Fetchy",'
        "b=`无法验证： ${e}`,v=\" （查看反馈）\",h='<div> 获取 </div>\\n        获取\\n'"
    )
    assert counts == {"Fetch": 3, "Fetch Feedback": 1, "Cannot validate:": 1, "(view feedback)": 1}


def _fake_extension(root, text='a.title="Validation Results"'):
    ext = root / "src"
    (ext / "static").mkdir(parents=True)
    (ext / "static" / "161.0123456789abcdef.js").write_text(text)
    (ext / "static" / "536.aaaaaaaaaaaaaaaa.js").write_text('css="x"')
    (ext / "static" / "remoteEntry.1111111111111111.js").write_text(
        'u=e=>e+"."+({161:"0123456789abcdef",536:"aaaaaaaaaaaaaaaa"})[e]+".js?v="+({161:"0123456789abcdef"})[e]'
    )
    package = {"name": "@jupyter/nbgrader", "version": "0.9.6", "jupyterlab": {"_build": {"load": "x"}}}
    (ext / "package.json").write_text(json.dumps(package))
    po = root / "c.po"
    po.write_text('msgid ""\nmsgstr ""\n"Language: zh\\n"\n\nmsgid "Validation Results"\nmsgstr "验证结果"\n')
    return ext, po


def test_build_renames_changed_chunks_keeps_the_rest_and_is_idempotent(tmp_path):
    ext, po = _fake_extension(tmp_path)
    out = tmp_path / "out"
    z.build(out, ext, po)
    target = out / "labextensions" / "@jupyter" / "nbgrader"
    static = sorted(p.name for p in (target / "static").iterdir())
    assert "161.0123456789abcdef.js" not in static and "536.aaaaaaaaaaaaaaaa.js" in static, static
    chunk = next(p for p in (target / "static").glob("161.*.js"))
    assert chunk.read_text() == 'a.title="验证结果"'
    new_hash = chunk.name.split(".")[1]
    entry = next((target / "static").glob("remoteEntry.*.js"))
    assert entry.name != "remoteEntry.1111111111111111.js"
    assert entry.read_text().count(f'"{new_hash}"') == 2 and "0123456789abcdef" not in entry.read_text()
    assert json.loads((target / "package.json").read_text())["jupyterlab"]["_build"]["load"] == f"static/{entry.name}"
    source = (ext / "static" / "161.0123456789abcdef.js").read_text()
    assert source == 'a.title="Validation Results"', "the source is untouched"
    assert oct(chunk.stat().st_mode & 0o777) == "0o644" and oct(target.stat().st_mode & 0o777) == "0o755"
    before = {p: p.stat().st_mtime_ns for p in target.rglob("*")}
    z.build(out, ext, po)  # same source, same catalog: nothing written
    assert {p: p.stat().st_mtime_ns for p in target.rglob("*")} == before


def test_a_msgid_the_extension_lost_is_an_error_and_the_stale_copy_goes(tmp_path, capsys):
    ext, po = _fake_extension(tmp_path)
    out = tmp_path / "out"
    z.build(out, ext, po)
    (ext / "static" / "161.0123456789abcdef.js").write_text('a.title="Results of validation"')  # a newer nbgrader
    with pytest.raises(z.TranslationError, match="Validation Results"):
        z.build(out, ext, po)
    prefix = tmp_path / "venv"
    shutil.copytree(ext, z.installed(prefix))
    z.CATALOG, saved = po, z.CATALOG
    try:
        assert z.main(["build", str(out), "--prefix", str(prefix)]) == 1
    finally:
        z.CATALOG = saved
    assert "not in nbgrader's lab extension 0.9.6" in capsys.readouterr().err
    assert not (out / "labextensions" / "@jupyter" / "nbgrader").exists()


def test_builds_at_once_leave_one_whole_copy(tmp_path):
    import threading

    ext, po = _fake_extension(tmp_path)
    out = tmp_path / "out"
    errors = []

    def one():
        try:
            z.build(out, ext, po)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    parent = out / "labextensions" / "@jupyter"
    assert sorted(p.name for p in parent.iterdir()) == ["nbgrader"], "no half copy or leftover beside it"
    assert next((parent / "nbgrader" / "static").glob("161.*.js")).read_text() == 'a.title="验证结果"'
