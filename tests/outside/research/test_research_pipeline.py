"""The research pipeline end to end against the fake SearXNG, the fake site and the fake model:
the notes it writes, what it fetches in parallel (and refuses to fetch), its fallback when the
outline fails, a failing search, reruns."""

from __future__ import annotations

import json
import time

from support.fake_llm import FakeLLM, Reply
from support.outside import Call
from support.research import QUERIES, QUESTION, Recorder, article, script_run, serve_pages
from support.searxng import FakeSearxng, result
from support.web_site import FakeSite

from fable_core.outside.research.pipeline import STAGGER
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def run_research(fable: Fable, caller: Caller, question: str = QUESTION,
                       progress: Recorder | None = None) -> dict:
    return await fable.dispatcher.call("research", {"question": question}, caller, progress=progress)


async def test_a_run_writes_an_index_note_linking_a_note_per_section(
        outside_fable: Fable, call: Call, alice: Caller, llm: FakeLLM, searxng: FakeSearxng, site: FakeSite,
        site_url: str) -> None:
    urls = serve_pages(site, searxng, site_url)
    script_run(llm)
    progress = Recorder()
    run = await run_research(outside_fable, alice, progress=progress)

    assert run["status"] == "done" and run["queries"] == QUERIES
    assert [s["url"] for s in run["sources"]] == urls and run["sources"][0]["title"] == "Page 1"
    index, *sections = run["notes"]
    assert index == {"note_id": run["index_note_id"], "title": "Research: Why does sourdough rise?", "role": "index"}
    assert [(s["title"], s["role"]) for s in sections] == [("Wild yeast", "section"), ("Lactic bacteria", "section")]
    kinds = progress.kinds()
    assert kinds[0] == "queries" and kinds[-1] == "done" and kinds.count("source") == 3
    assert kinds.count("search") == 5 and kinds.count("section") == 2 and "outline" in kinds
    assert progress.events("outline")[0]["sections"][0] == {"title": "Wild yeast", "focus": "all about wild yeast"}

    body = (await call("read_note", note_id=index["note_id"]))["body"]
    summary, links = body.split("## Sections")
    assert summary.startswith("Plain: Question: Why does sourdough rise? ## Wild yeast")  # the summary prompt, echoed
    assert "- [[Wild yeast]]\n- [[Lactic bacteria]]" in links and f"- [3] [Page 3]({urls[2]})" in links
    for section in sections:
        note = await call("read_note", note_id=section["note_id"])
        assert note["parent_id"] == index["note_id"] and note["tags"] == ["research"]
        assert note["body"].startswith(f"Plain: Question: {QUESTION} Section: {section['title']}")
        assert note["body"].endswith(f"## Sources\n\n- [1] [Page 1]({urls[0]})")  # the outline's sources
    # the model read the pages' article text, not their menus, scripts or asides
    prompt = llm.chat_bodies()[2]["messages"][1]["content"]
    assert "Fact number 1 about wild yeast" in prompt
    assert not any(junk in prompt for junk in ("Login", "tracking", "banner", "Buy our flour", "Copyright"))
    assert (await call("get_research", run_id=run["id"])) == run


async def test_searches_start_staggered_and_pages_are_fetched_in_parallel(
        outside_fable: Fable, alice: Caller, llm: FakeLLM, searxng: FakeSearxng, site: FakeSite,
        site_url: str) -> None:
    serve_pages(site, searxng, site_url, n=6, delay=0.4)
    searxng.delay = 0.5
    script_run(llm)
    progress = Recorder()
    run = await run_research(outside_fable, alice, progress=progress)
    assert run["status"] == "done"
    searched = [t for t, p in progress.items if p.event == "search"]
    # started 0.2 s apart, each taking 0.5 s: they end 4 x 0.2 s apart (together: 0 s; one after another: 2 s)
    assert 4 * STAGGER * 0.7 < searched[-1] - searched[0] < 4 * STAGGER + 1.0, searched
    read = [t for t, p in progress.items if p.event == "source"]
    assert len(read) == 6 and read[-1] - searched[-1] < 1.5  # six pages of 0.4 s each: at once (in turn: 2.4 s)


async def test_at_most_15_unique_urls_are_fetched_and_non_public_ones_never(
        outside_fable: Fable, alice: Caller, llm: FakeLLM, searxng: FakeSearxng, site: FakeSite,
        site_url: str) -> None:
    for i in range(30):
        site.page(f"/u{i}", article(f"U{i}", f"Text {i} on starters."))
    blocked = ["http://127.0.0.1:1/admin", "http://169.254.169.254/latest/meta-data/", "http://[::1]:8080/x"]
    for q, query in enumerate(QUERIES):  # each query ranks 6 pages; neighbours share some; fragments differ
        hits = [result(f"{site_url}/u{q * 4 + k}#part{q}", f"U{q * 4 + k}") for k in range(6)]
        searxng.answer(query, [result(blocked[q % 3], "internal"), *hits])
    script_run(llm)
    progress = Recorder()
    run = await run_research(outside_fable, alice, progress=progress)
    assert run["status"] == "done" and len(run["sources"]) == 15
    fetched = [r["path"] for r in site.requests]
    assert len(fetched) == 15 and len(set(fetched)) == 15
    skipped = {e["url"] for e in progress.events("source") if e["status"] == "skipped"}
    assert skipped == set(blocked)
    assert not any(s["url"] in blocked for s in run["sources"])


async def test_a_name_resolving_to_a_private_address_is_refused_by_the_guard(
        outside_fable: Fable, alice: Caller, llm: FakeLLM, searxng: FakeSearxng, site: FakeSite,
        site_url: str) -> None:
    urls = serve_pages(site, searxng, site_url, n=1)
    searxng.default.append(result("http://localhost:9/secret", "local"))
    script_run(llm)
    progress = Recorder()
    run = await run_research(outside_fable, alice, progress=progress)
    assert run["status"] == "done" and [s["url"] for s in run["sources"]] == urls
    [refused] = [e for e in progress.events("source") if e["url"] == "http://localhost:9/secret"]
    assert refused["status"] == "failed" and "not public" in refused["reason"]


async def test_an_outline_that_is_no_outline_gives_one_synthesised_note(
        outside_fable: Fable, call: Call, alice: Caller, llm: FakeLLM, searxng: FakeSearxng, site: FakeSite,
        site_url: str) -> None:
    serve_pages(site, searxng, site_url, n=2)
    script_run(llm, outline="Sure! I would write about yeast, then about bacteria.")
    llm.plain_replies.append(Reply("## Yeast\n\nWild yeast makes gas [1]."))
    progress = Recorder()
    run = await run_research(outside_fable, alice, progress=progress)
    assert run["status"] == "done" and [n["role"] for n in run["notes"]] == ["index"]
    assert progress.events("outline") == [{"sections": [], "fallback": (
        "the model's outline was not a list of 2 to 8 sections")}]
    note = await call("read_note", note_id=run["index_note_id"])
    assert note["body"].startswith("## Yeast\n\nWild yeast makes gas [1].\n\n## Sources\n\n- [1] [Page 1]")
    assert (await call("list_notes"))["total"] == 1


async def test_a_search_engine_that_times_out_fails_the_run_and_writes_nothing(
        outside_fable: Fable, call: Call, alice: Caller, llm: FakeLLM, searxng: FakeSearxng) -> None:
    searxng.delay = 3.0
    script_run(llm)
    started = time.monotonic()
    run = await run_research(outside_fable, alice)
    assert time.monotonic() - started < 3
    assert run["status"] == "error" and run["error"].startswith("web search failed: SearXNG did not answer within")
    assert run["queries"] == QUERIES and "notes" not in run and "index_note_id" not in run
    assert (await call("list_notes"))["items"] == []


async def test_pages_that_cannot_be_read_fail_the_run_and_write_nothing(
        outside_fable: Fable, call: Call, alice: Caller, llm: FakeLLM, searxng: FakeSearxng, site: FakeSite,
        site_url: str) -> None:
    site.put("/img", b"\x89PNG\r\n", "image/png")
    site.page("/gone", "gone", status=404)
    site.page("/empty", "<html><body><nav>only a menu</nav></body></html>")
    searxng.default = [result(f"{site_url}{p}", p) for p in ("/img", "/gone", "/empty", "/missing")]
    script_run(llm)
    progress = Recorder()
    run = await run_research(outside_fable, alice, progress=progress)
    assert run["status"] == "error" and run["error"] == "none of the 4 pages found could be read"
    reasons = {e["url"].removeprefix(site_url): e["reason"] for e in progress.events("source")}
    assert reasons == {"/img": "not a text page (image/png)", "/gone": "HTTP 404", "/empty": "no readable text",
                       "/missing": "HTTP 404"}
    assert (await call("list_notes"))["items"] == []


async def test_a_rerun_updates_the_same_notes_and_drops_sections_no_longer_there(
        outside_fable: Fable, call: Call, alice: Caller, llm: FakeLLM, searxng: FakeSearxng, site: FakeSite,
        site_url: str) -> None:
    serve_pages(site, searxng, site_url, n=2)
    script_run(llm, sections=["Wild yeast", "Lactic bacteria", "Timing"])
    first = await run_research(outside_fable, alice)
    ids = {n["title"]: n["note_id"] for n in first["notes"]}
    script_run(llm, sections=["Timing", "Wild Yeast!", "Temperature"])
    second = await run_research(outside_fable, alice, question="  why does SOURDOUGH rise ")
    assert second["status"] == "done" and second["id"] != first["id"]
    again = {n["title"]: n["note_id"] for n in second["notes"]}
    assert again == {"Research: Why does sourdough rise?": ids["Research: Why does sourdough rise?"],
                     "Timing": ids["Timing"], "Wild yeast": ids["Wild yeast"], "Temperature": again["Temperature"]}
    notes = (await call("list_notes", limit=20))["items"]
    assert sorted(n["title"] for n in notes) == sorted(again)  # "Lactic bacteria" is gone, nothing doubled
    index = await call("read_note", note_id=second["index_note_id"])
    assert index["version"] == 2 and "[[Temperature]]" in index["body"] and "Lactic" not in index["body"]
    timing = await call("read_note", note_id=ids["Timing"])
    assert timing["version"] == 2 and "Section: Timing" in timing["body"]


async def test_a_title_taken_by_another_note_gets_the_question_added(
        outside_fable: Fable, call: Call, alice: Caller, llm: FakeLLM, searxng: FakeSearxng, site: FakeSite,
        site_url: str) -> None:
    await call("create_note", title="Wild yeast", body="my own note")
    serve_pages(site, searxng, site_url, n=1)
    script_run(llm)
    run = await run_research(outside_fable, alice)
    titles = [n["title"] for n in run["notes"]]
    assert titles[1] == "Wild yeast (Why does sourdough rise?)"
    index = await call("read_note", note_id=run["index_note_id"])
    assert "[[Wild yeast (Why does sourdough rise?)]]" in index["body"]
    assert json.dumps(index).count("my own note") == 0
