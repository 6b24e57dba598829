"""Fenced code, highlighted on the server by Pygments: ``<span class="k">`` tokens, never inline
styles (the UI's CSP forbids them); ``css/markdown.css`` colours the classes, light and dark.

A block whose language Pygments does not know (or none) is escaped as is; so is a very long one,
which would cost more to highlight than it is worth.
"""

from __future__ import annotations

from html import escape

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

__all__ = ["TOKEN_CLASSES", "highlight_code"]

TOKEN_CLASSES = frozenset(c for c in STANDARD_TYPES.values() if c)
"""Every class a highlighted block's spans carry (what the sanitiser lets through)."""

MAX_HIGHLIGHTED = 50_000  # characters of one block; longer blocks are shown plain
_FORMATTER = HtmlFormatter(nowrap=True)
_LEXERS: dict[str, Lexer | None] = {}


def _lexer(language: str) -> Lexer | None:
    name = language.lower()[:40]
    if name not in _LEXERS and len(_LEXERS) < 500:
        try:
            _LEXERS[name] = get_lexer_by_name(name, stripnl=False, ensurenl=False)
        except ClassNotFound:
            _LEXERS[name] = None
    return _LEXERS.get(name)


def highlight_code(code: str, language: str, attributes: str = "") -> str:
    """A fenced block as ``<pre class="highlight"><code>`` (markdown-it's ``highlight`` option)."""
    lexer = _lexer(language) if language and len(code) <= MAX_HIGHLIGHTED else None
    inner = highlight(code, lexer, _FORMATTER) if lexer is not None else escape(code, quote=False)
    return f'<pre class="highlight"><code>{inner}</code></pre>'
