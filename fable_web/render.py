"""Markdown to safe HTML for the web UI: rendered on the server, sanitised before it leaves.

Notes are written by their owner, by agents over MCP and by the assistant, so their bodies are
untrusted input for a browser. markdown-it-py renders CommonMark (plus tables and strikethrough,
raw HTML allowed), then nh3 keeps only an allow-list of tags and attributes: no script, style,
iframe or form, no ``on*`` handler, no ``javascript:`` URL. The UI inserts only this HTML.

Images stay on this site: an ``<img>`` is kept only when its source is a cached image
(``/api/images/<id>``), which the UI's ``img-src 'self'`` allows; a markdown image of any other
URL becomes a plain link to it (its alt text as the label), and a raw ``<img>`` of another URL
loses its source, so reading a note never makes the browser contact another host.

``[[Title]]`` and ``[[Title|label]]`` become links to the note with that title (matched like the
core does, on ``title_key``), or to a "create it" link when no such note exists yet.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import JSONResponse

from fable_core.caller import Caller
from fable_core.errors import PayloadTooLarge
from fable_core.knowledge.lookups import note_ids_by_title
from fable_core.knowledge.types import MAX_BODY
from fable_core.knowledge.wikilinks import title_key
from fable_core.runtime import Fable
from fable_web.context import web
from fable_web.payload import parse_model, read_json_object
from fable_web.routing import ApiRoute, Doc

__all__ = ["Resolver", "link_keys", "render_markdown", "routes", "sanitise"]

Resolver = Callable[[str], int | None]
"""Maps a link's title to the id of the caller's note with that title, or None."""

_WIKILINK = re.compile(r"\[\[([^\[\]|\n]{1,300})(?:\|([^\[\]\n]{0,300}))?\]\]")

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark",
    "ol", "p", "pre", "q", "s", "samp", "small", "span", "strong", "sub", "summary", "sup",
    "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul",
}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "ol": {"start"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan", "scope"},
    "abbr": {"title"},
}
_CLASSES = {"a": {"wikilink", "wikilink-missing"}}
_SCHEMES = {"http", "https", "mailto"}


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    if not state.src.startswith("[[", state.pos):
        return False
    match = _WIKILINK.match(state.src, state.pos)
    if match is None or not match.group(1).strip():
        return False
    if not silent:
        token = state.push("wikilink", "a", 0)
        title = match.group(1).strip()
        label = (match.group(2) or "").strip() or title
        token.meta = {"title": title, "label": label}
    state.pos = match.end()
    return True


def _render_wikilink(
    self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]
) -> str:
    meta = tokens[idx].meta
    resolve: Resolver | None = env.get("resolve")
    note_id = resolve(meta["title"]) if resolve else None
    escape = self.escapeHtml if hasattr(self, "escapeHtml") else _escape
    if note_id is None:
        href = "/notes/new?title=" + quote(meta["title"])
        return (f'<a class="wikilink wikilink-missing" href="{escape(href)}" '
                f'title="Create {escape(meta["title"])}">{escape(meta["label"])}</a>')
    return f'<a class="wikilink" href="/notes/{int(note_id)}">{escape(meta["label"])}</a>'


_CACHED = re.compile(r"^/api/images/[1-9][0-9]{0,9}$")


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


def _image_source(tag: str, attribute: str, value: str) -> str | None:
    """nh3's filter: a raw ``<img>`` keeps its source only when it is a cached image."""
    if tag == "img" and attribute == "src" and not _CACHED.match(value):
        return None
    return value


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.add_render_rule("wikilink", _render_wikilink)
    md.add_render_rule("image", _render_image)
    return md


_MD = _parser()


def sanitise(html: str) -> str:
    """Keep only the allow-listed tags, attributes, classes and URL schemes."""
    return nh3.clean(
        html, tags=_TAGS, attributes=_ATTRIBUTES, allowed_classes=_CLASSES, url_schemes=_SCHEMES,
        clean_content_tags={"script", "style"}, link_rel="noopener noreferrer nofollow",
        attribute_filter=_image_source,
    )


def render_markdown(body: str, resolve: Resolver | None = None) -> str:
    """Render a note body to sanitised HTML; ``resolve`` turns wikilink titles into note ids."""
    return sanitise(_MD.render(body, {"resolve": resolve}))


def link_keys(body: str) -> set[str]:
    """The title keys of every wikilink in ``body`` (what a resolver will be asked about)."""
    return {title_key(m.group(1)) for m in _WIKILINK.finditer(body) if title_key(m.group(1))}


# --- routes ------------------------------------------------------------------------------------


class RenderBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    body: str


async def _resolver(fable: Fable, caller: Caller, body: str) -> Resolver:
    """One query for every link in ``body``: title key → the caller's oldest note with it."""
    ids = await note_ids_by_title(fable, caller, link_keys(body))
    return lambda title: ids.get(title_key(title))


async def _render_body(request: Request) -> JSONResponse:
    """``POST /api/render`` ``{"body": markdown}`` → ``{"html": sanitised}`` (editor preview)."""
    w = web(request)
    caller = await w.auth.caller(request)
    body = parse_model(RenderBody, await read_json_object(request)).body
    if len(body) > MAX_BODY:
        raise PayloadTooLarge(f"`body` is longer than {MAX_BODY} characters", field="body")
    return JSONResponse({"html": render_markdown(body, await _resolver(w.fable, caller, body))})


async def _note_html(request: Request) -> JSONResponse:
    """``GET /api/notes/{note_id}/html`` → the note's body as sanitised HTML, via read_note."""
    w = web(request)
    fable, caller = w.fable, await w.auth.caller(request)
    raw = request.path_params["note_id"]
    note = await fable.call("read_note", {"note_id": raw}, caller)
    resolve = await _resolver(fable, caller, note["body"])
    return JSONResponse({"id": note["id"], "version": note["version"],
                         "html": render_markdown(note["body"], resolve)})


routes = [
    ApiRoute("/api/render", _render_body, methods=["POST"],
             doc=Doc("Markdown to sanitised HTML (the editor's preview)", "ui", RenderBody)),
    ApiRoute("/api/notes/{note_id:int}/html", _note_html, methods=["GET"],
             doc=Doc("A note's body as sanitised HTML", "ui")),
]

