"""An exported module's text, made once: the memo every judging step reads a program's text through.

Its only state: a pure function of a module's bytes, bounded in characters (`TEXT_MEMO_CHARS`), so a program's
text is made once however many judging steps read it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

__all__ = ["TEXT_MEMO_CHARS", "module_text"]

TEXT_MEMO_CHARS = 64 * 2**20  # the module texts `module_text` keeps, at most (the least recently read go first)
_TEXTS: OrderedDict[bytes, str] = OrderedDict()  # sha256 of a module's bytecode -> its text
_TEXTS_LOCK = threading.Lock()
_TEXT_CHARS = [0]


def module_text(exp) -> str:
    """`exp.mlir_module()`: the module's bytecode parsed into a fresh MLIR context and printed (about 6 ms,
    and the judging steps read it several times per program). Made once per module, remembered by the
    digest of its bytes (a pure function of them); the texts kept are bounded by `TEXT_MEMO_CHARS`."""
    key = hashlib.sha256(exp.mlir_module_serialized).digest()
    with _TEXTS_LOCK:
        text = _TEXTS.get(key)
        if text is not None:
            _TEXTS.move_to_end(key)
            return text
    text = exp.mlir_module()
    if len(text) <= TEXT_MEMO_CHARS:
        with _TEXTS_LOCK:
            if key not in _TEXTS:
                _TEXTS[key] = text
                _TEXT_CHARS[0] += len(text)
            while _TEXT_CHARS[0] > TEXT_MEMO_CHARS:
                _TEXT_CHARS[0] -= len(_TEXTS.popitem(last=False)[1])
    return text
