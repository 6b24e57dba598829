"""The markdown people bring from Obsidian, as markdown-it rules: ``[[wikilinks]]`` (with
``#Heading`` and ``|label``), ``![[embeds]]``, ``> [!note]`` callouts, ``==highlight==``, inline
``#tags``, task-list checkboxes that know their source line, and ``dir="auto"`` on blocks.

The rules only build tokens and render them escaped; :mod:`fable_web.render` sanitises the whole
page after. What a link or embed points at comes from the render's ``env`` (filled before
rendering, in one query per level, by :func:`fable_web.render.render_note`): ``resolve`` maps a
title to the reader's note id, ``embeds`` a title key to the note an embed shows (only notes the
reader can see are in it), ``trail`` the notes being rendered (an embed of one of them is a
cycle and shows as a link), ``lines`` whether checkboxes carry their source line (not inside an
embed: that line is another note's).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from fable_core.db.hashtags import WORD, hashtag
from fable_core.knowledge.plaintext import plain_text
from fable_core.knowledge.sections import find_section
from fable_core.knowledge.wikilinks import split_target, title_key

__all__ = ["CALLOUTS", "MAX_EMBED_DEPTH", "embed_keys", "heading_id", "link_keys", "obsidian_plugin"]

MAX_EMBED_DEPTH = 3  # an embed inside an embed inside an embed; deeper ones show as links

_TARGET = r"([^\[\]|\n]{1,300})(?:\|([^\[\]\n]{0,300}))?"
WIKILINK = re.compile(r"\[\[" + _TARGET + r"\]\]")
_EMBED = re.compile(r"!\[\[" + _TARGET + r"\]\]")
_CALLOUT = re.compile(r"^\[!([A-Za-z-]{1,20})\]([+-]?)[ \t]*(.*)$", re.MULTILINE)
_TASK = re.compile(r"^\[([ xX])\][ \t]")
_FILE = re.compile(r"\.(?:png|jpe?g|gif|webp|avif|svg|bmp|pdf|mp3|mp4|webm|wav|ogg)$", re.IGNORECASE)

# Obsidian's callout types and the style each shows as (its aliases share one)
CALLOUTS = {
    "note": "note", "abstract": "abstract", "summary": "abstract", "tldr": "abstract", "info": "info",
    "todo": "todo", "tip": "tip", "hint": "tip", "important": "tip", "success": "success", "check": "success",
    "done": "success", "question": "question", "help": "question", "faq": "question", "warning": "warning",
    "caution": "warning", "attention": "warning", "failure": "failure", "fail": "failure", "missing": "failure",
    "danger": "danger", "error": "danger", "bug": "bug", "example": "example", "quote": "quote", "cite": "quote",
}
_DIRECTED = {"paragraph_open", "heading_open", "list_item_open", "blockquote_open", "th_open", "td_open"}


def heading_id(text: str) -> str:
    """A heading's id: ``h-`` and its words, lower case (the prefix keeps note ids apart from the page's)."""
    return "h-" + (re.sub(r"[^\w]+", "-", text.casefold()).strip("-") or "section")


def link_keys(body: str) -> set[str]:
    """The title keys of every wikilink and embed in ``body`` (what a resolver will be asked about)."""
    return {key for m in WIKILINK.finditer(body) if (key := title_key(split_target(m.group(1))[0]))}


def embed_keys(body: str) -> set[str]:
    """The title keys of the notes ``body`` embeds with ``![[Title]]``."""
    return {key for m in _EMBED.finditer(body) if (key := title_key(split_target(m.group(1))[0]))}


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


# --- links and embeds ---------------------------------------------------------------------------


def _link_rule(pattern: re.Pattern[str], kind: str, start: str) -> Callable[[StateInline, bool], bool]:
    def rule(state: StateInline, silent: bool) -> bool:
        if not state.src.startswith(start, state.pos):
            return False
        match = pattern.match(state.src, state.pos)
        if match is None:
            return False
        title, heading = split_target(match.group(1))
        if not title and not heading:
            return False
        if not silent:
            token = state.push(kind, "a", 0)
            shown = f"{title} > {heading}" if title and heading else title or heading
            label = (match.group(2) or "").strip() or shown
            token.meta = {"title": title, "heading": heading, "label": label}
        state.pos = match.end()
        return True
    return rule


def _href(note_id: int, heading: str | None) -> str:
    return f"/notes/{int(note_id)}" + (f"#{quote(heading_id(heading))}" if heading else "")


def _missing(title: str, label: str) -> str:
    href = "/notes/new?title=" + quote(title)
    return (f'<a class="wikilink wikilink-missing" href="{_escape(href)}" '
            f'title="Create {_escape(title)}">{_escape(label)}</a>')


def _render_wikilink(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    meta = tokens[idx].meta
    if not meta["title"]:  # [[#Heading]]: this note
        return f'<a class="wikilink" href="#{quote(heading_id(meta["heading"]))}">{_escape(meta["label"])}</a>'
    resolve = env.get("resolve")
    note_id = resolve(meta["title"]) if resolve else None
    if note_id is None:
        return _missing(meta["title"], meta["label"])
    return f'<a class="wikilink" href="{_href(note_id, meta["heading"])}">{_escape(meta["label"])}</a>'


def _embed_renderer(md: MarkdownIt) -> Callable[..., str]:
    def render(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
        meta = tokens[idx].meta
        if not meta["title"] or _FILE.search(meta["title"]):  # an attachment: notes only name store images
            return f'<span class="embed-missing">{_escape(meta["label"])}</span>'
        target = env.get("embeds", {}).get(title_key(meta["title"]))
        if target is None:  # no such note, or none the reader can see
            return f'<span class="embed embed-missing">{_missing(meta["title"], meta["label"])}</span>'
        link = f'<a class="wikilink" href="{_href(target.id, meta["heading"])}">{_escape(meta["label"])}</a>'
        trail: tuple[int, ...] = env.get("trail", ())
        if target.id in trail or len(trail) > MAX_EMBED_DEPTH:
            return f'<span class="embed embed-cut">{link}</span>'
        body = target.body
        if meta["heading"]:
            section = find_section(body, meta["heading"])
            if section is None:
                return f'<span class="embed embed-missing">{link}</span>'
            body = body[section.start:section.end]
        # a fresh env (the footnotes and heading ids of the page stay the page's), the same lookups
        inner = md.render(body, {"resolve": env.get("resolve"), "embeds": env.get("embeds"),
                                 "trail": (*trail, target.id), "lines": False})
        return f'<div class="embed"><div class="embed-title">{link}</div>{inner}</div>'
    return render


def _embed_blocks(state: StateCore) -> None:
    """A paragraph holding only an embed renders as the embed alone (a block inside no ``<p>``)."""
    tokens = state.tokens
    for i in range(1, len(tokens) - 1):
        inline = tokens[i]
        if inline.type != "inline" or tokens[i - 1].type != "paragraph_open":
            continue
        kids = [c for c in inline.children or [] if not (c.type in ("text", "softbreak") and not c.content.strip())]
        if kids and all(c.type == "embed" for c in kids):
            tokens[i - 1].hidden = tokens[i + 1].hidden = True


# --- callouts, tasks, direction -----------------------------------------------------------------


def _callouts(state: StateCore) -> None:
    """``> [!warning] Title`` blockquotes become callouts (before inline parsing, which then
    parses what follows the marker line as usual)."""
    tokens = state.tokens
    for i, token in enumerate(tokens[:-2]):
        if token.type != "blockquote_open" or tokens[i + 1].type != "paragraph_open":
            continue
        inline = tokens[i + 2]
        first, _, rest = inline.content.partition("\n")
        match = _CALLOUT.match(first)
        if match is None:
            continue
        kind = match.group(1).lower()
        style = CALLOUTS.get(kind, "note")
        token.tag = "div"
        token.attrSet("class", f"callout callout-{style}")
        token.meta = {"callout": match.group(3).strip() or kind.capitalize()}
        inline.content = rest
        if not rest.strip():  # the marker was the paragraph: drop it
            tokens[i + 1].hidden = tokens[i + 3].hidden = True
        depth = 0
        for closing in tokens[i + 1:]:
            if closing.type == "blockquote_open":
                depth += 1
            elif closing.type == "blockquote_close":
                if depth == 0:
                    closing.tag = "div"
                    break
                depth -= 1


def _render_blockquote_open(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    token = tokens[idx]
    opened: str = self.renderToken(tokens, idx, options, env)
    if token.meta and "callout" in token.meta:
        opened += f'<div class="callout-title">{_escape(token.meta["callout"])}</div>\n'
    return opened


def _tasks(state: StateCore) -> None:
    """``- [ ]`` / ``- [x]`` list items start with a checkbox token that knows its source line."""
    tokens = state.tokens
    for i in range(2, len(tokens)):
        inline = tokens[i]
        if (inline.type != "inline" or tokens[i - 1].type != "paragraph_open"
                or tokens[i - 2].type != "list_item_open" or not inline.children):
            continue
        first = inline.children[0]
        match = _TASK.match(first.content) if first.type == "text" else None
        if match is None:
            continue
        first.content = first.content[match.end():]
        box = Token("task_checkbox", "input", 0)
        lines = tokens[i - 2].map
        box.meta = {"checked": match.group(1) != " ", "line": lines[0] if lines else None,
                    "label": plain_text(inline.content[match.end():], 80) or "task"}
        inline.children.insert(0, box)
        tokens[i - 2].attrSet("class", "task-item")


def _render_checkbox(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    meta = tokens[idx].meta
    named = f'class="task-box" aria-label="Done: {_escape(meta["label"])}"' + (" checked" if meta["checked"] else "")
    if env.get("lines", True) and meta["line"] is not None:
        return f'<input type="checkbox" {named} data-line="{int(meta["line"])}"> '
    return f'<input type="checkbox" {named} disabled> '


def _direction(state: StateCore) -> None:
    """Blocks take their direction from their text (``dir="auto"``): right-to-left lines read right."""
    for token in state.tokens:
        if token.type in _DIRECTED and not token.hidden:
            token.attrSet("dir", "auto")


# --- inline marks -------------------------------------------------------------------------------


def _highlight_rule(state: StateInline, silent: bool) -> bool:
    """``==text==`` → ``<mark>``; the text inside is parsed as inline markdown."""
    start = state.pos
    if not state.src.startswith("==", start) or state.src.startswith("===", start):
        return False
    end = state.src.find("==", start + 2)
    if end < 0 or end == start + 2 or state.src[start + 2].isspace() or state.src[end - 1].isspace():
        return False
    if not silent:
        state.push("mark_open", "mark", 1)
        old_max = state.posMax
        state.pos, state.posMax = start + 2, end
        state.md.inline.tokenize(state)
        state.posMax = old_max
        state.push("mark_close", "mark", -1)
    state.pos = end + 2
    return True


def _tag_rule(state: StateInline, silent: bool) -> bool:
    """An inline ``#tag`` (after a space or at the start, not all digits) links to its notes."""
    pos = state.pos
    if state.src[pos] != "#" or (pos > 0 and not state.src[pos - 1].isspace()):
        return False
    match = WORD.match(state.src, pos)
    if match is None or match.end() > state.posMax:
        return False
    written = match.group(1).rstrip("/")
    tag = hashtag(written)  # the note's tag (fable_core.db.hashtags): the link lists the note
    if tag is None:
        return False
    if not silent:
        token = state.push("hashtag", "a", 0)
        token.meta = {"tag": tag, "written": written}
    state.pos = pos + 1 + len(written)
    return True


def _render_tag(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    meta = tokens[idx].meta
    return f'<a class="tag" href="/notes?tag={quote(meta["tag"])}">#{_escape(meta["written"])}</a>'


def obsidian_plugin(md: MarkdownIt) -> None:
    """Teach ``md`` the rules above."""
    md.inline.ruler.before("image", "embed", _link_rule(_EMBED, "embed", "![["))
    md.inline.ruler.before("link", "wikilink", _link_rule(WIKILINK, "wikilink", "[["))
    md.inline.ruler.before("emphasis", "highlight", _highlight_rule)
    md.inline.ruler.after("entity", "hashtag", _tag_rule)
    md.core.ruler.after("block", "callouts", _callouts)
    md.core.ruler.after("inline", "tasks", _tasks)
    md.core.ruler.after("tasks", "embed_blocks", _embed_blocks)
    md.core.ruler.push("direction", _direction)
    md.add_render_rule("wikilink", _render_wikilink)
    md.add_render_rule("embed", _embed_renderer(md))
    md.add_render_rule("hashtag", _render_tag)
    md.add_render_rule("task_checkbox", _render_checkbox)
    md.add_render_rule("blockquote_open", _render_blockquote_open)
