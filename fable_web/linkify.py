"""Bare URLs as links, in time linear in the note: markdown-it-py's ``linkify`` rule, rebuilt.

The library's rule replaces each linkified text token by its pieces with ``arrayReplaceAt``,
which copies the whole list of the paragraph's tokens every time: a paragraph of 20,000 URLs
copied 20,000 lists of 60,000 tokens (300 kB of note took 18 s of the process). This rule finds
the same links (linkify-it-py's matcher, the same normalisation and validation) and builds each
paragraph's token list once. Everything else it does is the library's, step for step.
"""

from __future__ import annotations

import re

from markdown_it.common.utils import isLinkClose, isLinkOpen
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

__all__ = ["linkify"]

_HTTP = re.compile(r"^http://")
_MAILTO = re.compile(r"^mailto:")
_TEST_MAILTO = re.compile(r"^mailto:", flags=re.IGNORECASE)


def linkify(state: StateCore) -> None:
    """The core rule: replaces the library's ``linkify`` (``md.core.ruler.at("linkify", linkify)``)."""
    matcher = state.md.linkify
    if not state.md.options.linkify or matcher is None:
        return
    for inline in state.tokens:
        if inline.type != "inline" or not inline.children or not matcher.pretest(inline.content):
            continue
        inline.children = _linkified(state, inline.children)


def _linkified(state: StateCore, tokens: list[Token]) -> list[Token]:
    replaced: dict[int, list[Token]] = {}
    html_level = 0
    i = len(tokens)
    while i >= 1:  # from the end, as the library does: its link and HTML skipping depend on it
        i -= 1
        current = tokens[i]
        if current.type == "link_close":
            i -= 1
            while tokens[i].level != current.level and tokens[i].type != "link_open":
                i -= 1
            continue
        if current.type == "html_inline":
            if isLinkOpen(current.content) and html_level > 0:
                html_level -= 1
            if isLinkClose(current.content):
                html_level += 1
        if html_level > 0:
            continue
        if current.type == "text" and state.md.linkify is not None and state.md.linkify.test(current.content):
            escaped_before = i > 0 and tokens[i - 1].type == "text_special"
            nodes = _split(state, current, escaped_before)
            if nodes is not None:
                replaced[i] = nodes
    if not replaced:
        return tokens
    out: list[Token] = []
    for index, token in enumerate(tokens):
        out.extend(replaced.get(index, (token,)))
    return out


def _split(state: StateCore, current: Token, escaped_before: bool) -> list[Token] | None:
    text = current.content
    assert state.md.linkify is not None
    links = state.md.linkify.match(text) or []
    if links and links[0].index == 0 and escaped_before:  # "http\://x" is no link
        links = links[1:]
    nodes: list[Token] = []
    level, last = current.level, 0
    for link in links:
        full = state.md.normalizeLink(link.url)
        if not state.md.validateLink(full):
            continue
        label = link.text
        if not link.schema:
            label = _HTTP.sub("", state.md.normalizeLinkText("http://" + label))
        elif link.schema == "mailto:" and _TEST_MAILTO.search(label):
            label = _MAILTO.sub("", state.md.normalizeLinkText("mailto:" + label))
        else:
            label = state.md.normalizeLinkText(label)
        if link.index > last:
            nodes.append(_text(text[last:link.index], level))
        opening = Token("link_open", "a", 1, attrs={"href": full}, level=level, markup="linkify", info="auto")
        nodes += [opening, _text(label, level + 1),
                  Token("link_close", "a", -1, level=level, markup="linkify", info="auto")]
        last = link.last_index
    if not nodes:
        return None
    if last < len(text):
        nodes.append(_text(text[last:], level))
    return nodes


def _text(content: str, level: int) -> Token:
    return Token("text", "", 0, content=content, level=level)
