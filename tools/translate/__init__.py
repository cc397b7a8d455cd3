"""Translation catalogs of the course: extract, update, compile, check (one tool, Babel underneath).

    python -m tools.translate update     # merge the current English into locale/zh/*.po
    python -m tools.translate compile    # locale/zh/namedaxes.po -> namedaxes/locale/zh/LC_MESSAGES/namedaxes.mo
    python -m tools.translate check      # fail unless every catalog is in sync, complete and consistent
    python -m tools.translate check --sync    # only: catalogs and .mo match the English source (CI, always)
    python -m tools.translate extract    # write the templates to build/i18n/*.pot (to look at)

Catalogs (`locale/zh/`), one per notebook plus one for the helper package:

- `notebooks/NN_topic.po`: the prose of `solutions/NN_topic.ipynb`, msgctxt = the cell id. A
  markdown cell is cut into units so that a small English edit re-marks only its unit: a heading,
  a paragraph, a list item, a blockquote line, a table cell. The structure (heading marks, list
  markers and indentation, table pipes, fenced code blocks, blank lines) stays outside the msgids and
  is rebuilt around the translations, so a translator cannot break it; a paragraph's soft line
  breaks become spaces (markdown renders them so), so re-wrapping English changes nothing. Units
  without words (`lax.psum`, `2 (k − 1) / k · N`) are kept as they are. Student-facing comments of
  code cells are units too (msgctxt `<cell id>#comment`); nbgrader's markers, `noqa` and the like are
  not; so is a test cell's one-line docstring (msgctxt `<cell id>#docstring`: what the cell checks),
  and so is every label the code shows a student (msgctxt `<cell id>#output`): the string literals
  of `print(...)` calls, of `assert` messages and of the collections a loop prints its labels from,
  as `courseinfo.labels` defines them (f-strings as written, their `{fields}` included: fields are
  code and stay exactly). Code itself is never translated.
- `namedaxes.po`: every module-level `TEXT = {...}` table of `namedaxes/` and `autograder/`, the words of
  every notebook's exercise package (its `text.py`: `TEXT` and `HINTS`, imported, never parsed), every
  `gettext("...")`/`_("...")` call there, and the literal
  `title=`, `note=`, `*_label=`, `ylabel=` arguments of `plot_*` calls in the solution notebooks (the
  figures translate them when drawn). No msgctxt: the runtime (`namedaxes.i18n.gettext`) looks up by
  the English text; the location key is the `#:` reference (`namedaxes/checking/text.py#TEXT.passed`).

`update` is Babel's merge: an unchanged English text keeps its translation; a changed one is matched
to its old entry, keeps the old translation marked **fuzzy** with the previous msgid (`#| msgid`), so
the translator sees exactly what changed; new texts arrive empty; texts gone from the English are
dropped (no obsolete `#~` entries). Files are written deterministically (fixed header dates, source
order), so `check --sync` can regenerate in memory and compare bytes.

`check` reports, per catalog, what keeps it from being complete: out of sync with the English (run
`update`), missing/empty, fuzzy, obsolete entries, and translations that lost a `{placeholder}`, a
backtick code span, a link target or a list/heading marker (code, API names and JAX's error texts
stay English, so code spans must be identical). The .mo must be what `compile` writes. Then, so that
the edition reads as one voice:

- terms (`locale/<lang>/glossary.tsv`): an entry whose English prose (outside code spans,
  placeholders, CONSTANTS and quoted axis names) has a term uses its Chinese (one of them, where the
  glossary lists alternatives "元素 / 项"), unless the row says `optional` (a word that is also a
  verb, like "name"); and never one of the row's `avoid` words (条目 for an array's entries);
- punctuation of a Chinese translation: no space after full-width punctuation (，。：；？！、）),
  no Latin sentence end before a full-width one (`."。`, `.。`), no doubled full stop;
- one English, one rendering: the same msgid translated differently in two places (two catalogs,
  or two cells of one) is an error that names both places;
- a code label (`#output`): it must still fit its literal (`courseinfo.labels.translation_problems`:
  the same f-string fields and escapes, no quote or line break that ends the literal), it writes
  the colon before a value as a Latin `:` (print puts a space after it: no space after a
  full-width colon), and it keeps no English word but the code its notebook uses (`pmap`,
  `shard_map`, `params`, the HLO ops the cell compares with: `all-gather`).

The package, a module per step (each imports only those above it):

    catalogs.py     where each catalog is, a new one, an entry added, read and written
    markdown.py     a markdown cell's units;  comments.py  a code cell's comments
    docstrings.py   a test cell's docstring;  label_units.py  the labels its code shows
    templates.py    the English templates, extracted from the solutions and the packages
    merging.py      `update` and `compile`
    rules.py        the rules of one entry (consistency, glossary terms, punctuation)
    verify.py       `check`: each catalog's report, one rendering of each English text
    __main__.py     the command line
"""

from __future__ import annotations

from .catalogs import (
    DOMAIN,
    LOCALE,
    catalog_names,
    load_catalog,
    mo_path,
    notebook_ids,
    po_bytes,
    po_path,
    translations,
)
from .comments import comment_context, comment_units, render_comments, strip_comments
from .docstrings import DOCSTRING, docstring_context, docstring_unit, render_docstring, strip_prose
from .label_units import code_words, label_problems, output_context, output_units, render_outputs
from .markdown import CODE_SPAN, Unit, markdown_units, render_markdown, translatable
from .merging import compile_catalogs, merged, update
from .rules import consistency_problems, glossary, glossary_problems, punctuation_problems
from .templates import STUB_COMMENT, STUB_CONTEXT, notebook_template, package_template, render_stub, template
from .verify import Report, check, rendering_problems, report

__all__ = [
    "DOMAIN",
    "LOCALE",
    "catalog_names",
    "notebook_ids",
    "po_path",
    "mo_path",
    "po_bytes",
    "load_catalog",
    "translations",
    "Unit",
    "translatable",
    "CODE_SPAN",
    "markdown_units",
    "render_markdown",
    "comment_units",
    "render_comments",
    "strip_comments",
    "comment_context",
    "DOCSTRING",
    "docstring_unit",
    "render_docstring",
    "strip_prose",
    "docstring_context",
    "output_units",
    "render_outputs",
    "output_context",
    "code_words",
    "label_problems",
    "STUB_COMMENT",
    "STUB_CONTEXT",
    "render_stub",
    "notebook_template",
    "package_template",
    "template",
    "merged",
    "update",
    "compile_catalogs",
    "consistency_problems",
    "glossary",
    "glossary_problems",
    "punctuation_problems",
    "Report",
    "report",
    "rendering_problems",
    "check",
]
