"""What the templates extract from the packages and the notebooks (tools/translate/templates.py)."""

from __future__ import annotations

from namedaxes import checking
from tools import translate


def test_extraction_covers_text_tables_hints_gettext_calls_and_notebook_figure_labels():
    cat = translate.package_template()
    ids = {m.id for m in cat if m.id}
    assert checking.TEXT.english("passed") in ids  # core TEXT (a Messages(...) call)
    from namedaxes.exercises import collectives

    assert set(dict(collectives.TEXT.items()).values()) <= ids  # an exercise module's TEXT
    assert set(collectives.ring_all_reduce._hints) <= ids  # its hints
    assert {"device {i}", "Training loss"} <= ids  # plots: gettext calls and defaults
    assert "x2 = device 2's block" in ids  # a notebook's note= of a figure
    assert all(m.context is None for m in cat)  # runtime looks up by English only
