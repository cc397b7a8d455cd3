"""The language a student reads the course in, and its translations at display time.

The course has one English source; the Chinese edition is generated from it plus gettext
catalogs (`locale/zh/*.po`, managed by `tools/i18n.py`). This module is the runtime half:
every student-facing string of the helper package (the `TEXT` tables, hints, plot labels,
the autograder's feedback) is written in English and passed through `gettext` when it is
shown, so no logic ever branches on the language.

Language of a kernel, the first rule that applies (`language()`; computed once, then cached):

1. `set_language(lang)` was called (tests, or a student who wants the other language).
2. The environment variable `NAMEDAXES_LANG` is set and not empty. Only "en" and "zh" are
   accepted; anything else warns once and means "en" (the autograder sets it from the
   submission notebook's metadata, and a bad value must not stop grading).
3. The notebook's set-up cell, as the kernel ran it (IPython's input history, `In`): the cell
   that calls `setup_devices(` is in a language when its comments are (`setup_cell_language`:
   Chinese ideographs in a comment mean "zh"). The generator translates that cell's comments in
   every edition and refuses an edition whose set-up cell does not say its language
   (tools/generate_notebooks.py), and the cell is locked, so this works wherever the notebook
   runs: on Colab (no `JPY_SESSION_NAME`, no `zh` folder), under nbval and nbgrader's Validate,
   in a copy renamed or moved anywhere. `setup_devices()` asks for detection again once it ran,
   so a language looked up before the set-up cell (an import) does not stick. It comes before
   rule 4 because it is what the kernel really ran, while a server's session path need not name
   that file (a JupyterLab kernel on a workspace's Chinese copy spoke English by rule 4 alone).
4. The notebook the kernel runs, as Jupyter tells it: jupyter_server starts a session's kernel
   with `JPY_SESSION_NAME` = the notebook's path (`SessionManager.get_kernel_env`: the
   kernel's working directory joined with the file name), and ipykernel copies it into the
   user namespace as `__session__`. If that file exists (an absolute path, or its file name
   in the working directory) and is at most `MAX_NOTEBOOK_BYTES`, its
   `metadata.namedaxes.language` decides, when it is one of `LANGUAGES`.
5. Otherwise "en". The folder a notebook sits in never decides (a `zh` folder of the release
   is only where the Chinese notebooks are kept; a checkout in a folder named `zh` is English).

Translations: the compiled catalog `namedaxes/locale/<lang>/LC_MESSAGES/namedaxes.mo`, read
with the standard library's `gettext` (no Babel at run time, so Colab needs nothing extra).
Entries are keyed by the English text alone (no msgctxt), so any code can translate a string
it shows with `gettext(english)`. An English text with no translation (or only a fuzzy one,
which is not compiled) is shown in English: a missing translation degrades, never breaks.
"""

from __future__ import annotations

import gettext as _stdlib_gettext
import json
import os
import sys
import warnings
from pathlib import Path

from courseinfo.course import LANGUAGES

__all__ = ["LANGUAGES", "language", "set_language", "gettext", "detect_language", "catalog_path"]

DOMAIN = "namedaxes"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
ENV = "NAMEDAXES_LANG"
# A course notebook is well under 1 MiB without outputs; a saved one with pictures stays far below this.
MAX_NOTEBOOK_BYTES = 32 * 1024 * 1024

# Module state lives in mutated containers (the autograder restores module globals between cells).
_STATE: dict[str, str | None] = {"override": None, "detected": None}
_CATALOGS: dict[str, _stdlib_gettext.NullTranslations] = {}
_WARNED: set[str] = set()


def _check(lang: str) -> str:
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}: the course has {', '.join(LANGUAGES)}")
    return lang


def _notebook_language(path: str | None, cwd: Path) -> str | None:
    """`metadata.namedaxes.language` of the notebook at `path` (see rule 3), or None."""
    if not path:
        return None
    candidates = [Path(path)] if os.path.isabs(path) else []
    candidates.append(cwd / Path(path).name)  # a path relative to the server's root: the kernel runs in its folder
    for candidate in candidates:
        try:
            if not candidate.is_file() or candidate.stat().st_size > MAX_NOTEBOOK_BYTES:
                continue
            meta = json.loads(candidate.read_text(encoding="utf-8")).get("metadata", {})
        except (OSError, ValueError, AttributeError):
            continue
        lang = meta.get("namedaxes", {}).get("language") if isinstance(meta, dict) else None
        if lang in LANGUAGES:
            return lang
        if candidate.suffix == ".ipynb":
            return None  # the notebook was found and says nothing: its set-up cell decides
    return None


def _is_chinese(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf"


def setup_cell_language(source: str) -> str | None:
    """The language a notebook's set-up cell is written in ("zh" when a comment has Chinese
    ideographs), or None: not a set-up cell (no `setup_devices(` call), or English comments."""
    if not isinstance(source, str) or "setup_devices(" not in source:
        return None
    import io
    import tokenize

    try:
        comments = [
            t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return "zh" if any(_is_chinese(ch) for c in comments for ch in c) else None


def _history_language(user_ns: dict | None) -> str | None:
    """Rule 4: the language of the last set-up cell in the kernel's input history."""
    if user_ns is None and "IPython" in sys.modules:
        from IPython import get_ipython

        user_ns = getattr(get_ipython(), "user_ns", None)
    history = (user_ns or {}).get("In")
    if not isinstance(history, list):
        return None
    for source in reversed(history):
        if isinstance(source, str) and "setup_devices(" in source:
            return setup_cell_language(source)
    return None


def _session_path(user_ns: dict | None) -> str | None:
    if user_ns is None and "IPython" in sys.modules:
        from IPython import get_ipython

        shell = get_ipython()
        user_ns = getattr(shell, "user_ns", None)
    session = (user_ns or {}).get("__session__")
    return session if isinstance(session, str) and session else None


def detect_language(
    environ: dict | None = None, cwd: str | os.PathLike | None = None, user_ns: dict | None = None
) -> str:
    """The language by rules 2-5 of the module docstring (`environ`, `cwd`, `user_ns` default to this
    process's; `cwd` only locates a notebook named by a relative session path)."""
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else Path(cwd)
    value = (environ.get(ENV) or "").strip()
    if value:
        if value in LANGUAGES:
            return value
        if value not in _WARNED:
            _WARNED.add(value)
            warnings.warn(f"{ENV}={value!r} is not one of {', '.join(LANGUAGES)}: using English", stacklevel=2)
        return "en"
    ran = _history_language(user_ns)  # the set-up cell the kernel ran says its language first (rule 3)
    if ran is not None:
        return ran
    for session in (environ.get("JPY_SESSION_NAME"), _session_path(user_ns)):
        lang = _notebook_language(session, cwd)
        if lang is not None:
            return lang
    return "en"


def language() -> str:
    """The language this kernel shows its messages in: "en" or "zh"."""
    if _STATE["override"] is not None:
        return _STATE["override"]
    if _STATE["detected"] is None:
        _STATE["detected"] = detect_language()
    return _STATE["detected"]


def set_language(lang: str | None) -> None:
    """Show messages in `lang` from now on ("en" or "zh"; None: detect again). Unknown: ValueError."""
    _STATE["override"] = None if lang is None else _check(lang)
    _STATE["detected"] = None


def detect_again() -> None:
    """Forget the detected language (not a `set_language` choice): the next lookup detects anew.
    `setup_devices()` calls it, so that its cell (rule 4) counts from then on."""
    _STATE["detected"] = None


def catalog_path(lang: str) -> Path:
    """Where the compiled catalog of `lang` lives (`tools/i18n.py compile` writes it)."""
    return LOCALE_DIR / _check(lang) / "LC_MESSAGES" / f"{DOMAIN}.mo"


def _catalog(lang: str) -> _stdlib_gettext.NullTranslations:
    if lang not in _CATALOGS:
        try:
            with open(catalog_path(lang), "rb") as fh:
                _CATALOGS[lang] = _stdlib_gettext.GNUTranslations(fh)
        except OSError:  # no compiled catalog: English
            _CATALOGS[lang] = _stdlib_gettext.NullTranslations()
    return _CATALOGS[lang]


def translator(lang: str):
    """`gettext` of one language, whatever the kernel's is (the notebook generator writes an edition with it)."""
    return _catalog(_check(lang)).gettext


def gettext(message: str) -> str:
    """`message` (English) in the current language; the English text itself when it has no translation."""
    lang = language()
    if lang == "en" or not message:
        return message
    return _catalog(lang).gettext(message)


class Messages(dict):
    """A table of English templates (a module's `TEXT`) whose lookups come back translated.

    `table[key]` is `gettext(english)` in the current language; iterating, `.items()` and
    `.values()` give the English (what tests and the catalog tool read). Wrap a table once, where it is
    written (every exercise package's `text.py`: `TEXT = {...}`, made one by `namedaxes.exercises.notebook_words`).
    """

    def __getitem__(self, key):
        return gettext(dict.__getitem__(self, key))

    def get(self, key, default=None):
        return self[key] if key in self else default  # noqa: SIM401 - dict.get would skip the translation

    def english(self, key) -> str:
        return dict.__getitem__(self, key)

    def say(self, key, /, **fields) -> str:
        """The template `key` in the current language, with `fields` put in (each once: a value's own
        braces stay literal)."""
        return self[key].format(**fields)


def is_wide(ch: str) -> bool:
    """`ch` takes two columns in a terminal (CJK ideographs, kana, hangul, full-width punctuation)."""
    import unicodedata

    return unicodedata.east_asian_width(ch) in ("W", "F")


__all__ += ["Messages", "is_wide", "setup_cell_language", "detect_again", "translator"]
