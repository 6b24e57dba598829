"""Server-side markdown rendering: wikilinks become note links, nothing executable survives."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import httpx
import pytest
from support.web import error_of

from fable_web.render import link_keys, render_markdown


class _Collector(HTMLParser):
    """Every start tag with its attributes, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Collector()
    parser.feed(html)
    return parser.tags


def test_markdown_renders_headings_emphasis_lists_and_tables() -> None:
    html = render_markdown("# Plan\n\n*soon* **now** ~~never~~\n\n- a\n- b\n\n|x|y|\n|-|-|\n|1|2|\n")
    assert '<h1 id="h-plan" dir="auto">Plan</h1>' in html  # an id to link to, a direction from its text
    assert "<em>soon</em>" in html and "<strong>now</strong>" in html and "<s>never</s>" in html
    assert '<li dir="auto">a</li>' in html
    assert '<td dir="auto">1</td>' in html


def test_wikilinks_link_to_the_resolved_note_with_their_label() -> None:
    ids = {"Alpha": 7, "Beta": 9}
    html = render_markdown("See [[Alpha]] and [[Beta|the second]].", ids.get)
    links = [attrs for tag, attrs in _tags(html) if tag == "a"]
    assert [a["href"] for a in links] == ["/notes/7", "/notes/9"]
    assert all(a["class"] == "wikilink" for a in links)
    assert ">Alpha</a>" in html and ">the second</a>" in html


def test_unresolved_wikilink_offers_to_create_the_note() -> None:
    html = render_markdown("Later: [[Not Yet Written]]", lambda title: None)
    (tag, attrs), = _tags(html)[1:]
    assert tag == "a"
    assert attrs["href"] == "/notes/new?title=Not%20Yet%20Written"
    assert attrs["class"] == "wikilink wikilink-missing"


def test_wikilinks_inside_code_stay_literal() -> None:
    html = render_markdown("`[[Alpha]]`\n\n```\n[[Beta]]\n```\n", lambda title: 1)
    assert "<code>[[Alpha]]</code>" in html
    assert "[[Beta]]" in html
    assert not [t for t, _ in _tags(html) if t == "a"]


def test_wikilink_titles_and_labels_are_escaped() -> None:
    html = render_markdown('[[x" onmouseover="alert(1)|<b>bold</b>]]', lambda title: None)
    (tag, attrs), = _tags(html)[1:]
    assert tag == "a" and not any(name.startswith("on") for name in attrs)
    assert "&lt;b&gt;bold&lt;/b&gt;" in html


PAYLOADS = [
    "<script>window.pwned = 1</script>",
    "<img src=x onerror=\"window.pwned = 1\">",
    "<svg onload=\"window.pwned = 1\"></svg>",
    "<a href=\"javascript:window.pwned=1\">click</a>",
    "<a href=\"JaVaScRiPt:window.pwned=1\">click</a>",
    "[click](javascript:window.pwned=1)",
    "<iframe src=\"https://example.com\"></iframe>",
    "<style>body { display: none }</style>",
    "<div style=\"background:url(javascript:x)\">styled</div>",
    "<form action=\"/api/auth/logout\" method=\"post\"><button>go</button></form>",
    "<object data=\"x.swf\"></object><embed src=\"x.swf\">",
    "<details open ontoggle=\"window.pwned=1\"><summary>s</summary></details>",
    "<img src=\"data:image/svg+xml,<svg onload=alert(1)>\">",
    "<a href=\"/x\" class=\"wikilink evil\" onclick=\"window.pwned=1\">spoof</a>",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_nothing_executable_survives(payload: str) -> None:
    html = render_markdown(f"Before\n\n{payload}\n\nafter [[Alpha]]", lambda title: 3)
    allowed_tags = {"p", "a", "img", "div", "details", "summary", "button"} - {"button"}
    for tag, attrs in _tags(html):
        assert tag in allowed_tags, (tag, html)
        for name, value in attrs.items():
            assert not name.startswith("on") and name != "style", (name, html)
            if name in ("href", "src"):
                assert value is not None
                assert value.startswith(("/", "http:", "https:", "x")), (value, html)
            if name == "class":
                assert set((value or "").split()) <= {"wikilink", "wikilink-missing"}
    assert "<script" not in html and "<style" not in html


def test_script_content_is_dropped_not_shown() -> None:
    assert "pwned" not in render_markdown("<script>window.pwned = 1</script>")


def test_link_keys_are_the_title_keys_of_every_link() -> None:
    assert link_keys("[[Project: Alpha]] and [[beta|B]] but not [[ ]]") == {"project alpha", "beta"}


# --- the routes: POST /api/render and GET /api/notes/{id}/html ------------------------------


async def test_note_html_links_the_callers_own_notes(as_alice: httpx.AsyncClient) -> None:
    target = (await as_alice.post("/api/notes", json={"title": "Project: Alpha"})).json()
    note = (await as_alice.post("/api/notes", json={
        "title": "Log", "body": "See [[project alpha|Alpha]] and [[Nowhere]].\n\n<img src=x onerror=alert(1)>",
    })).json()
    r = await as_alice.get(f"/api/notes/{note['id']}/html")
    assert r.status_code == 200
    data = r.json()
    assert data["id"] == note["id"] and data["version"] == 1
    links = {attrs["href"]: attrs["class"] for tag, attrs in _tags(data["html"]) if tag == "a"}
    assert links == {f"/notes/{target['id']}": "wikilink",
                     "/notes/new?title=Nowhere": "wikilink wikilink-missing"}
    assert "onerror" not in data["html"]


async def test_front_matter_is_folded_as_written_and_its_aliases_resolve_links(as_alice: httpx.AsyncClient) -> None:
    kitchen = (await as_alice.post("/api/notes", json={
        "title": "Kitchen renovation", "body": "---\naliases: [Galley, \"<script>x</script>\"]\n---\nTiles."})).json()
    note = (await as_alice.post("/api/notes", json={"title": "Plans",
                                                     "body": "Redo the [[galley]], ![[Galley]]."})).json()
    data = (await as_alice.get(f"/api/notes/{kitchen['id']}/html")).json()
    assert data["html"].startswith('<details class="properties"><summary>Properties</summary><pre><code>aliases: '
                                   '[Galley, "&lt;script&gt;x&lt;/script&gt;"]</code></pre></details>')
    html = (await as_alice.get(f"/api/notes/{note['id']}/html")).json()["html"]
    links = {attrs["href"]: attrs["class"] for tag, attrs in _tags(html) if tag == "a"}
    assert links == {f"/notes/{kitchen['id']}": "wikilink"}, "an alias finds the note it names"
    assert "Tiles." in html and "embed-missing" not in html


async def test_render_resolves_links_only_among_the_callers_notes(
    as_alice: httpx.AsyncClient, as_bob: httpx.AsyncClient
) -> None:
    await as_bob.post("/api/notes", json={"title": "Secret plans"})
    r = await as_alice.post("/api/render", json={"body": "[[Secret plans]]"})
    assert r.status_code == 200
    assert 'href="/notes/new?title=Secret%20plans"' in r.json()["html"]
    mine = (await as_alice.post("/api/notes", json={"title": "Secret plans"})).json()
    r = await as_alice.post("/api/render", json={"body": "[[Secret plans]]"})
    assert f'href="/notes/{mine["id"]}"' in r.json()["html"]


async def test_another_users_note_html_is_not_found(
    as_alice: httpx.AsyncClient, as_bob: httpx.AsyncClient
) -> None:
    note = (await as_bob.post("/api/notes", json={"title": "Bob's", "body": "private"})).json()
    r = await as_alice.get(f"/api/notes/{note['id']}/html")
    assert r.status_code == 404
    assert error_of(r)["type"] == "not_found"
    assert "private" not in r.text


async def test_render_needs_a_signed_in_caller(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/render", json={"body": "# hi"})
    assert r.status_code == 401
    assert error_of(r)["type"] == "unauthenticated"
    assert (await client.get("/api/notes/1/html")).status_code == 401


@pytest.mark.parametrize(("send", "status", "kind"), [
    ({"content": b"{not json", "headers": {"content-type": "application/json"}}, 400, None),
    ({"content": b"body=x", "headers": {"content-type": "application/x-www-form-urlencoded"}}, 415, None),
    ({"json": {"body": 3}}, 422, "invalid_input"),
    ({"json": {"body": "x", "extra": 1}}, 422, "invalid_input"),
    ({"json": ["body"]}, 422, "invalid_input"),
    ({"json": {"body": "x" * 1_000_001}}, 413, None),
])
async def test_render_refuses_bad_requests(
    as_alice: httpx.AsyncClient, send: dict[str, Any], status: int, kind: str | None
) -> None:
    r = await as_alice.post("/api/render", **send)
    assert r.status_code == status, r.text
    if kind:
        assert error_of(r)["type"] == kind
