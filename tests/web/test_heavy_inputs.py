"""Hostile inputs to every path that parses, renders, diffs, extracts or imports: each is answered
(or refused with a clear error) and none stalls the process for everyone else.

The stall is what the suite's loop guard measures in every test (``tests/support/loopguard.py``:
a test fails when one event-loop callback spends more than 200 ms of CPU); these tests feed it the
inputs of security round 3, each of which held the loop for seconds to minutes: 8,000 headings
(heading ids deduplicated quadratically), 300 kB of bare URLs (linkify copying the paragraph per
link), a 5,000-column table, 3,000 footnotes, a page of 12,000 ``<script`` (a quadratic regex),
12,000 unclosed ``<svg>`` (a list searched per end tag), a merge of 3,000 equal lines
(``difflib`` without its junk heuristic), and imports that inflate or nest absurdly. Each result
is checked too: moving the work off the loop must not change what it produces.
"""

from __future__ import annotations

import io
import json
import zipfile

import httpx
import pytest
from support.web import error_of

from fable_core.assistant.context import page_text
from fable_core.errors import InvalidInput, PayloadTooLarge
from fable_core.infra.pages import read_page
from fable_core.outside.feeds.parsing import parse
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

HEADINGS = "# a\n" * 8000
URLS = "see www.example.com and http://x.example/z " * 7000  # ~300 kB, one paragraph
TABLE = "|" + "a|" * 5000 + "\n|" + "-|" * 5000 + "\n|" + "b|" * 5000 + "\n"
FOOTNOTES = "".join(f"x[^{i}] " for i in range(3000)) + "\n\n" + "".join(f"[^{i}]: n{i}\n" for i in range(3000))


async def test_pathological_markdown_renders_off_the_loop(as_alice: httpx.AsyncClient) -> None:
    for body, shows in ((HEADINGS, 'id="h-a-7999"'), (URLS, 'href="http://x.example/z"'), (TABLE, "<th"),
                        (FOOTNOTES, 'id="fn3000"')):
        r = await as_alice.post("/api/render", json={"body": body})
        assert r.status_code == 200, r.text[:300]
        assert shows in r.json()["html"]


async def test_a_shared_note_of_them_renders_for_its_reader(fable: Fable, as_bob: httpx.AsyncClient,
                                                             alice: Caller, bob: Caller) -> None:
    note = await fable.call("create_note", {"title": "Many headings", "body": HEADINGS}, alice)
    await fable.call("share", {"note_id": note["id"], "with_user": "bob", "permission": "viewer"}, alice)
    r = await as_bob.get(f"/api/notes/{note['id']}/html")
    assert r.status_code == 200 and r.json()["html"].count("<h1") == 8000


async def test_a_body_past_the_limit_is_refused_before_any_work(as_alice: httpx.AsyncClient) -> None:
    r = await as_alice.post("/api/render", json={"body": "x" * 1_000_001})
    assert r.status_code == 413 and error_of(r)["details"]["field"] == "body"


async def test_merging_thousands_of_equal_lines_is_near_linear(fable: Fable, alice: Caller) -> None:
    base = "same line\n" * 3000
    note = await fable.call("create_note", {"title": "Repeats", "body": base}, alice)
    await fable.call("update_note", {"note_id": note["id"], "body": base + "their line\n"}, alice)
    merged = await fable.call("merge_note_edit", {"note_id": note["id"], "base_version": 1,
                                                  "body": "my line\n" + base}, alice)
    assert merged["clean"] and merged["body"] == "my line\n" + base + "their line\n"
    distinct = "\n".join(f"line {i}" for i in range(8000))
    other = await fable.call("create_note", {"title": "Distinct", "body": distinct}, alice)
    mine = "\n".join(f"mine {i}" for i in range(8000))
    await fable.call("update_note", {"note_id": other["id"], "body": distinct.replace("line 5", "theirs 5")}, alice)
    clash = await fable.call("merge_note_edit", {"note_id": other["id"], "base_version": 1, "body": mine}, alice)
    assert not clash["clean"] and "<<<<<<< theirs" in clash["body"]


def _zip(name: str, content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, content)
    return out.getvalue()


@pytest.fixture(scope="module")
def zeros() -> bytes:
    """A few kB of ZIP: conversations.json of 400,000 items (made outside the test's own phase)."""
    return _zip("conversations.json", json.dumps([0] * 400_000).encode())


@pytest.fixture(scope="module")
def huge_vault() -> bytes:
    """Four 16 MB Markdown files (compressed to almost nothing) and one small note."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(4):
            z.writestr(f"vault/big {i}.md", b"word " * 3_200_000)
        z.writestr("vault/small.md", b"# Small\n\nfits")
    return out.getvalue()


async def test_absurd_exports_are_refused_quickly_and_write_nothing(fable: Fable, alice: Caller, zeros: bytes,
                                                                    huge_vault: bytes) -> None:
    assert len(zeros) < 10_000
    with pytest.raises(PayloadTooLarge, match="400,000 entries"):
        await fable.call("import_conversations", {"content": zeros}, alice)
    with pytest.raises(InvalidInput, match="nested too deeply"):
        await fable.call("import_conversations", {"content": b"[" * 100_000 + b"]" * 100_000}, alice)
    report = await fable.call("import_vault", {"content": huge_vault, "dry_run": True}, alice)
    assert report["created"] == 1
    assert {s["item"] for s in report["skipped_items"]} == {f"big {i}.md" for i in range(4)}
    assert all("more than a note holds" in s["reason"] for s in report["skipped_items"])


async def test_hostile_pages_and_feeds_are_read_off_the_loop() -> None:
    scripts = "<html><body><p>kept</p>" + "<script" * 12_000 + "</body></html>"
    assert "kept" in await page_text(scripts)
    svgs = "<html><body><p>before</p>" + "<svg>" * 12_000 + "</b>" * 12_000 + "<p>after</p></body></html>"
    assert (await read_page(svgs)).text.startswith("before")
    entry = "<item><title>t{}</title><description>" + "&lt;svg&gt;" * 2000 + "</description></item>"
    feed = ("<rss version='2.0'><channel><title>Big</title>" + "".join(entry.format(i) for i in range(50))
            + "</channel></rss>").encode()
    parsed = await parse(feed, "https://feeds.example/rss")
    assert parsed.title == "Big" and len(parsed.entries) == 50
