"""Markdown to safe HTML for the web UI: rendered on the server, sanitised before it leaves.

Notes are written by their owner, by agents over MCP and by the assistant, so their bodies are
untrusted input for a browser. markdown-it-py renders CommonMark with what notes contain (tables,
strikethrough, footnotes, task lists, ``$math$``, autolinks, front matter folded, and the
Obsidian syntax of :mod:`fable_web.obsidian`), fenced code highlighted by
:mod:`fable_web.highlight`, math as MathML (latex2mathml); raw HTML is allowed, then nh3 keeps
only an allow-list of tags, attributes and classes: no script, style, iframe or form, no ``on*``
handler, no ``javascript:`` URL, ids only of headings (``h-…``) and footnotes (``fn…``), inputs
only as checkboxes. The UI inserts only this HTML.

Images stay on this site: an ``<img>`` is kept only when its source is a cached image
(``/api/images/<id>``), which the UI's ``img-src 'self'`` allows; a markdown image of any other
URL becomes a plain link to it (its alt text as the label), and a raw ``<img>`` of another URL
loses its source, so reading a note never makes the browser contact another host.

``[[Title]]``, ``[[Title#Heading|label]]`` become links to the note with that title the reader
can see (matched like the core does, on ``title_key``), or to a "create it" link when there is
none; ``![[Title]]`` shows that note's rendered body (or one section of it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import nh3
from latex2mathml.converter import convert as latex_to_mathml
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response

from fable_core.errors import PayloadTooLarge
from fable_core.infra.offload import Budget, offload
from fable_core.knowledge.lookups import TitledBody, note_ids_by_title, notes_by_title
from fable_core.knowledge.types import MAX_BODY
from fable_core.knowledge.wikilinks import title_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.context import web
from fable_web.highlight import TOKEN_CLASSES, highlight_code
from fable_web.linkify import linkify
from fable_web.obsidian import CALLOUTS, MAX_EMBED_DEPTH, embed_keys, heading_id, link_keys, obsidian_plugin
from fable_web.payload import parse_model, read_json_object
from fable_web.rest import model_response
from fable_web.routing import ApiRoute, Doc

__all__ = ["Resolver", "link_keys", "render_markdown", "render_note", "routes", "sanitise"]

Resolver = Callable[[str], int | None]
"""Maps a link's title to the id of the caller's note with that title, or None."""
RENDER = Budget("rendering markdown", MAX_BODY * (MAX_EMBED_DEPTH + 2), 10.0)
"""A note with its embeds, off the event loop (:mod:`fable_core.infra.offload`): the largest note of
Fable's most expensive markdown renders in about 5 s on the reference machine."""

_MATH_TAGS = {
    "math", "maction", "menclose", "merror", "mfenced", "mfrac", "mi", "mmultiscripts", "mn", "mo", "mover",
    "mpadded", "mphantom", "mprescripts", "mroot", "mrow", "ms", "mspace", "msqrt", "mstyle", "msub", "msubsup",
    "msup", "mtable", "mtd", "mtext", "mtr", "munder", "munderover", "none", "semantics", "annotation",
}
_MATH_ATTRIBUTES = {
    "accent", "accentunder", "columnalign", "columnlines", "columnspacing", "depth", "display", "displaystyle",
    "fence", "form", "frame", "height", "linethickness", "lspace", "mathsize", "mathvariant", "maxsize",
    "minsize", "movablelimits", "notation", "rowalign", "rowlines", "rowspacing", "rspace", "scriptlevel",
    "separator", "stretchy", "symmetric", "width", "xmlns",
}
_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "input", "ins", "kbd", "li", "mark",
    "ol", "p", "pre", "q", "s", "samp", "section", "small", "span", "strong", "sub", "summary", "sup",
    "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", *_MATH_TAGS,
}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title", "id"},
    "img": {"src", "alt", "title", "width", "height"},
    "ol": {"start", "dir"},
    "ul": {"dir"},
    "td": {"colspan", "rowspan", "dir"},
    "th": {"colspan", "rowspan", "scope", "dir"},
    "abbr": {"title"},
    "p": {"dir"},
    "blockquote": {"dir"},
    "div": {"dir"},
    "li": {"dir", "id"},
    "input": {"type", "checked", "disabled", "data-line", "aria-label"},
    **{h: {"id", "dir"} for h in _HEADINGS},
    **dict.fromkeys(_MATH_TAGS, _MATH_ATTRIBUTES),
}
_CLASSES = {
    "a": {"wikilink", "wikilink-missing", "tag", "footnote-backref"},
    "div": {"callout", "callout-title", "embed", "embed-title", "embed-missing", "embed-cut", "math", "block",
            "inline", *(f"callout-{style}" for style in set(CALLOUTS.values()))},
    "span": {"math", "inline", "embed", "embed-missing", "embed-cut", *TOKEN_CLASSES},
    "pre": {"highlight"},
    "li": {"task-item", "footnote-item"},
    "ol": {"footnotes-list"},
    "hr": {"footnotes-sep"},
    "section": {"footnotes"},
    "sup": {"footnote-ref"},
    "input": {"task-box"},
    "details": {"properties"},
    "th": {"align-left", "align-center", "align-right"},
    "td": {"align-left", "align-center", "align-right"},
}
_SCHEMES = {"http", "https", "mailto"}
_CACHED = re.compile(r"^/api/images/[1-9][0-9]{0,9}$")
_ID = re.compile(r"^(h-|fn)[\w-]{0,200}$")


def _render_image(
    self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]
) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    if _CACHED.match(src):
        rendered: str = self.image(tokens, idx, options, env)
        return rendered
    alt = self.renderInlineAsText(token.children or [], options, env) or src
    return f'<a href="{_escape(src)}">{_escape(alt)}</a>'


def _allowed(tag: str, attribute: str, value: str) -> str | None:
    """nh3's filter: a raw ``<img>`` keeps its source only when it is a cached image; ids only
    of headings and footnotes (never one of the page's own); ``data-line`` only as a number."""
    if tag == "img" and attribute == "src" and not _CACHED.match(value):
        return None
    if attribute == "id" and not _ID.match(value):
        return None
    if attribute == "data-line" and not value.isdigit():
        return None
    return value


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _math(latex: str, options: dict[str, Any]) -> str:
    """``$…$`` and ``$$…$$`` as MathML; what latex2mathml cannot read stays as its source."""
    try:
        return str(latex_to_mathml(latex, display="block" if options.get("display_mode") else "inline"))
    except Exception:  # noqa: BLE001 (latex2mathml's dozen errors share no base): the source is shown
        return f"<code>{_escape(latex)}</code>"


def _parser() -> MarkdownIt:
    md = (MarkdownIt("commonmark", {"html": True, "linkify": True, "highlight": highlight_code})
          .enable(["table", "strikethrough", "linkify"]))
    md.use(front_matter_plugin).use(footnote_plugin)
    md.use(dollarmath_plugin, allow_space=False, allow_digits=False, renderer=_math)
    md.core.ruler.push("heading_ids", _heading_ids)
    md.core.ruler.push("table_align", _table_align)
    md.core.ruler.at("linkify", linkify)  # linear in the paragraph: fable_web.linkify
    md.use(obsidian_plugin)
    md.add_render_rule("image", _render_image)
    md.add_render_rule("front_matter", _render_front_matter)
    return md


def _render_front_matter(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    """A note's front matter (an imported vault's ``aliases``, ``status``...) as it is written,
    folded under "Properties": kept with the note, out of the way of reading it."""
    return (f'<details class="properties"><summary>Properties</summary>'
            f"<pre><code>{_escape(tokens[idx].content)}</code></pre></details>\n")


_ALIGN = re.compile(r"^text-align:(left|center|right)$")


def _table_align(state: StateCore) -> None:
    """A column's alignment (``|--:|``) as a class: markdown-it writes it as a ``style``, which
    the sanitiser drops (no inline style ever reaches the page)."""
    for token in state.tokens:
        if token.type in ("th_open", "td_open") and (found := _ALIGN.match(str(token.attrGet("style") or ""))):
            del token.attrs["style"]
            token.attrJoin("class", f"align-{found.group(1)}")


def _heading_ids(state: StateCore) -> None:
    """Give every heading its id (:func:`heading_id`), repeats numbered ``-1``, ``-2``...:
    linear in the headings, where mdit-py-plugins' anchors tried every number from 1 for each
    repeat (8,000 equal headings took 39 s)."""
    taken: set[str] = set()
    next_number: dict[str, int] = {}
    for index, token in enumerate(state.tokens):
        if token.type != "heading_open":
            continue
        children = state.tokens[index + 1].children or []
        base = heading_id("".join(c.content for c in children if c.type in ("text", "code_inline")))
        number = next_number.get(base, 0)
        slug = base if number == 0 else f"{base}-{number}"
        while slug in taken:
            number += 1
            slug = f"{base}-{number}"
        next_number[base] = number + 1
        taken.add(slug)
        token.attrSet("id", slug)


_MD = _parser()


def sanitise(html: str) -> str:
    """Keep only the allow-listed tags, attributes, classes and URL schemes."""
    return nh3.clean(
        html, tags=_TAGS, attributes=_ATTRIBUTES, allowed_classes=_CLASSES, url_schemes=_SCHEMES,
        clean_content_tags={"script", "style"}, link_rel="noopener noreferrer nofollow",
        attribute_filter=_allowed, set_tag_attribute_values={"input": {"type": "checkbox"}},
    )


def render_markdown(body: str, resolve: Resolver | None = None, embeds: dict[str, TitledBody] | None = None,
                    note_id: int | None = None, lines: bool = True) -> str:
    """Render a note body to sanitised HTML; ``resolve`` turns wikilink titles into note ids,
    ``embeds`` maps the title keys of embedded notes to them (see :func:`render_note`); with
    ``lines``, task checkboxes carry their source line (else they are disabled)."""
    env = {"resolve": resolve, "embeds": embeds or {}, "trail": (note_id,) if note_id else (), "lines": lines}
    return sanitise(_MD.render(body, env))


async def render_note(fable: Fable, caller: Caller, body: str, note_id: int | None = None) -> str:
    """Render ``body`` as ``caller`` reads it: links resolved and embeds filled with the notes
    they can see, one query per level of embedding and one for every link. Without the
    ``note_id`` of the note it is (a preview), its task checkboxes are disabled."""
    embeds: dict[str, TitledBody] = {}
    keys, wanted, tried = link_keys(body), embed_keys(body), set[str]()
    for _ in range(MAX_EMBED_DEPTH + 1):
        wanted -= tried
        if not wanted:
            break
        tried |= wanted
        found = await notes_by_title(fable, caller, wanted)
        embeds.update(found)
        wanted = set()
        for note in found.values():
            keys |= link_keys(note.body)
            wanted |= embed_keys(note.body)
    ids = await note_ids_by_title(fable, caller, keys)
    size = len(body) + sum(len(note.body) for note in embeds.values())
    return await offload(RENDER, size, render_markdown, body, lambda title: ids.get(title_key(title)), embeds,
                         note_id, lines=note_id is not None)


# --- routes ------------------------------------------------------------------------------------


class RenderBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    body: str


class Rendered(BaseModel):
    html: str = Field(description="Sanitised HTML.")


class NoteHtml(Rendered):
    id: int
    version: int


async def _render_body(request: Request) -> Response:
    """``POST /api/render`` ``{"body": markdown}`` → ``{"html": sanitised}`` (editor preview)."""
    w = web(request)
    caller = await w.auth.caller(request)
    body = parse_model(RenderBody, await read_json_object(request)).body
    if len(body) > MAX_BODY:
        raise PayloadTooLarge(f"`body` is longer than {MAX_BODY} characters", field="body")
    return model_response(Rendered(html=await render_note(w.fable, caller, body)))


async def _note_html(request: Request) -> Response:
    """``GET /api/notes/{note_id}/html`` → the note's body as sanitised HTML, via read_note."""
    w = web(request)
    fable, caller = w.fable, await w.auth.caller(request)
    raw = request.path_params["note_id"]
    note = await fable.call("read_note", {"note_id": raw}, caller)
    return model_response(NoteHtml(id=note["id"], version=note["version"],
                                   html=await render_note(fable, caller, note["body"], note["id"])))


routes = [
    ApiRoute("/api/render", _render_body, methods=["POST"],
             doc=Doc("Markdown to sanitised HTML (the editor's preview)", "ui", RenderBody, result=Rendered)),
    ApiRoute("/api/notes/{note_id:int}/html", _note_html, methods=["GET"],
             doc=Doc("A note's body as sanitised HTML", "ui", result=NoteHtml)),
]

