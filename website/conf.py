"""Sphinx configuration of the course site, one file for both editions.

Design: build_site.py runs `sphinx-build -c website/` once per edition, on the sources it generated
in build/site-src/<edition>/, with `NAMEDAXES_SITE_EDITION` = en or zh; this file turns that into
Sphinx's language, the site title and the search language. English is built into build/site/,
Chinese into build/site/zh/, so every page has its counterpart at the same path one folder down
(or up), which is all the language switch needs (`_language_switch`, shown in every page's
header by _templates/language-switch.html). The stack is the one JAX's docs use: myst-nb renders
the composed notebooks with their stored outputs (execution off: execute_notebooks.py ran them),
sphinx-book-theme lays the pages out (search box, navigation, a layout that folds for phones).
Math is typeset by MathJax 3 served from the site itself (the files of the
`sphinx-mathjax-offline` package, only the ones tex-chtml needs), so the site needs no CDN and
works offline; `sphinx.ext.githubpages` writes `.nojekyll` for GitHub Pages. Every link Sphinx
writes is relative, so the folder can be served from any path or opened from disk.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

from website import settings
from website.site_text import text

EDITION = os.environ.get("NAMEDAXES_SITE_EDITION", "en")
if EDITION not in settings.EDITIONS:
    raise ValueError(f"NAMEDAXES_SITE_EDITION={EDITION!r}: one of {', '.join(settings.EDITIONS)}")
OTHER = next(e for e in settings.EDITIONS if e != EDITION)

project = text("site_title", EDITION)
html_title = project
author = ""
copyright = ""
language = settings.EDITIONS[EDITION][0]

extensions = ["myst_nb", "sphinx.ext.mathjax", "sphinx.ext.githubpages"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
nb_execution_mode = "off"
nb_merge_streams = True
nb_output_stderr = "show"

exclude_patterns = ["_build", "**.ipynb_checkpoints"]
templates_path = [str(settings.SITE / "_templates")]
html_static_path = [str(settings.SITE / "_static")]
html_css_files = ["site.css"]
html_favicon = str(settings.SITE / "_static" / "favicon.svg")  # without one, browsers ask for /favicon.ico (a 404)
html_theme = "sphinx_book_theme"
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "use_download_button": False,
    "article_header_end": ["language-switch.html", "article-header-buttons.html"],
    "navigation_with_keys": False,
    # one search field per page: the sidebar's (the theme also put one in an otherwise empty top bar)
    "navbar_persistent": [],
}
html_context = {"default_mode": "auto"}  # light or dark as the reader's system prefers (an empty mode logs an error)
html_copy_source = False
html_show_sourcelink = False
html_show_sphinx = False
html_last_updated_fmt = None
html_search_language = "zh" if EDITION == "zh" else "en"


def _search_words(lang: str) -> Path:
    """jieba's user dictionary for the Chinese search index: the glossary's terms (locale/zh/glossary.tsv), so
    that 集合通信操作 or 轴名称 are words of the index, not only the pieces jieba's own dictionary knows."""
    terms = []
    for line in (settings.ROOT / "locale" / lang / "glossary.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or "\t" not in line:
            continue
        terms += [t.strip() for t in line.split("\t")[1].split("/") if re.search(r"[\u4e00-\u9fff]", t)]
    path = settings.BUILD / f"site-search-words-{lang}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{t} 1000 n\n" for t in dict.fromkeys(terms)), encoding="utf-8")
    return path


if EDITION == "zh":  # segmented by jieba (website/requirements.in), with the course's own terms
    html_search_options = {"dict": str(_search_words("zh"))}

# MathJax 3 from the site itself: tex-chtml.js and what it loads (fonts, TeX extensions).
mathjax_path = "mathjax/tex-chtml.js"
MATHJAX_PARTS = ("tex-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions", "ui", "a11y")


def _mathjax_source() -> Path:
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the sphinx-mathjax-offline package is not installed (`make site-venv` installs website/requirements.txt)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax"


def _copy_mathjax(app, exc) -> None:
    if exc is not None:
        return
    source, target = _mathjax_source(), Path(app.outdir) / "_static" / "mathjax"
    for part in MATHJAX_PARTS:
        src, dst = source / part, target / part
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def _language_switch(app, pagename, templatename, context, doctree) -> None:
    """The relative URL of this page in the other edition (English at the root, Chinese in zh/)."""
    up = "../" * pagename.count("/")
    if settings.EDITIONS[OTHER][1]:  # to the edition one folder down
        url = f"{up}{settings.EDITIONS[OTHER][1]}/{pagename}.html"
    else:  # back up to the root edition
        url = f"{up}../{pagename}.html"
    context.update(
        site_switch_url=url,
        site_switch_lang=OTHER,
        site_switch_name=text("language_name", OTHER),
        site_switch_title=text("switch_label", OTHER),
        site_edition=EDITION,
    )


def _search_chinese_with_its_stemmer() -> None:
    """Sphinx 9.0's Chinese search names its JS stemmer `ChineseStemmer` but ships the English one, so
    every zh page logged "ChineseStemmer is not defined" (sphinx-doc/sphinx#14416, fixed in Sphinx 9.1,
    which needs Python >= 3.12): name the class that its stemmer file defines."""
    from sphinx.search import languages
    from sphinx.search.zh import SearchChinese

    class SearchChineseEnglishStemmer(SearchChinese):
        language_name = "English"

    languages["zh"] = SearchChineseEnglishStemmer


def _drop_output_folder(app, exc) -> None:
    """myst-nb writes its output images to OUTDIR/../jupyter_execute before Sphinx copies them into
    _images/; for the Chinese edition (build/site/zh) that is inside the published site."""
    if exc is None and EDITION != "en":
        shutil.rmtree(Path(app.outdir).parent / "jupyter_execute", ignore_errors=True)


def setup(app):
    _search_chinese_with_its_stemmer()
    app.connect("build-finished", _drop_output_folder)
    app.connect("html-page-context", _language_switch)
    app.connect("build-finished", _copy_mathjax)
