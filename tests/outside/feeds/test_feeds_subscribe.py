"""Subscribing to feeds over real HTTP from a fake site: the feed is read once before anything
is stored (its title the default name, its items kept as text), RSS 2.0 and Atom; what is not a
feed, or an address the SSRF guard refuses, is a clear error and stores nothing; bad input is
refused on the dispatcher, REST and MCP; list, change, unsubscribe, each user their own."""

from __future__ import annotations

import pytest
from support.feed_samples import atom, rss
from support.mcp_clients import data, http_connect, make_key
from support.outside import Api, Call
from support.web_site import FakeSite

from fable_core.errors import Conflict, InvalidInput, NotFound, Unavailable
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

NEWS = rss("Daily News", [
    ("Rain expected", "<p>Bring an <b>umbrella</b>.</p><script>alert('x')</script>"),
    ("Markets calm", "<p>Stocks &amp; bonds <img src=x onerror=alert(1)> flat.</p>")])


async def test_subscribing_reads_the_feed_and_keeps_its_items_as_text(call: Call, site: FakeSite,
                                                                     site_url: str) -> None:
    site.put("/news.xml", NEWS, "application/rss+xml")
    feed = await call("subscribe_feed", url=f"{site_url}/news.xml", category="news")
    assert feed["name"] == "Daily News" and feed["category"] == "news"
    assert (feed["items"], feed["unread"], feed["site_url"]) == (2, 2, "https://news.example/")
    page = await call("list_feed_items", full=True)
    assert [i["title"] for i in page["items"]] == ["Markets calm", "Rain expected"]  # newest first
    assert page["items"][0]["text"] == "Stocks & bonds flat."
    assert page["items"][1]["text"] == "Bring an umbrella."  # no markup, no script
    assert page["items"][1]["link"] == "https://news.example/0" and page["items"][1]["feed"] == "Daily News"
    assert "next_cursor" not in page and all(not i["read"] for i in page["items"])


async def test_an_atom_feed_with_a_name_given(call: Call, site: FakeSite, site_url: str, outside_fable: Fable,
                                             alice: Caller) -> None:
    site.put("/blog.atom", atom("Ann's blog", [("First", "<p>Hello <em>world</em></p>"),
                                               ("Second", "<ul><li>one</li><li>two</li></ul>")]),
             "application/atom+xml")
    feed = await outside_fable.call("subscribe_feed", {"url": f"{site_url}/blog.atom", "name": "Ann",
                                                       "category": "friends"}, alice)
    assert feed["name"] == "Ann"
    items = (await call("list_feed_items", feed_id=feed["id"], full=True))["items"]
    assert [(i["title"], i["text"], i["author"]) for i in items] == [
        ("Second", "one\ntwo", "Ann"), ("First", "Hello world", "Ann")]


@pytest.mark.parametrize(("body", "content_type", "status", "error", "message"), [
    ("<!doctype html><html><body><p>Welcome</p></body></html>", "text/html", 200, InvalidInput,
     "is a web page, not an RSS or Atom feed"),
    ("<?xml version='1.0'?><rss version='2.0'><channel><title>X</title><item><title>Bro", "application/rss+xml",
     200, InvalidInput, "is malformed"),
    ("", "application/xml", 200, InvalidInput, "is empty, not an RSS or Atom feed"),
    ("gone", "text/plain", 404, Unavailable, "answered HTTP 404"),
])
async def test_what_is_not_a_feed_is_refused_and_nothing_is_stored(
        call: Call, site: FakeSite, site_url: str, body: str, content_type: str, status: int,
        error: type[Exception], message: str) -> None:
    site.put("/x", body, content_type, status=status)
    with pytest.raises(error, match=message):
        await call("subscribe_feed", url=f"{site_url}/x")
    assert (await call("list_feeds"))["feeds"] == []


async def test_the_ssrf_guard_refuses_private_addresses_and_redirects_to_them(
        call: Call, site: FakeSite, site_url: str) -> None:
    other_port = f"http://127.0.0.1:{int(site_url.rsplit(':', 1)[1]) + 1}/feed.xml"
    site.put("/hop", "", status=302, headers={"location": other_port})
    for url in (other_port, "http://169.254.169.254/latest/meta-data/", "http://[::ffff:10.0.0.1]/f",
                f"{site_url}/hop", "file:///etc/passwd"):
        with pytest.raises(InvalidInput, match=r"not public|only http and https"):
            await call("subscribe_feed", url=url)
    assert len(site.hits("/hop")) == 1  # the redirect was asked, its target never
    assert (await call("list_feeds"))["feeds"] == []
    with pytest.raises(InvalidInput) as refused:  # the refusal says how an operator allows a local feed
        await call("subscribe_feed", url="http://127.0.0.1:9/feed.xml")
    assert refused.value.message.endswith("to allow it, an administrator adds 127.0.0.1:9 to FABLE_FETCH_ALLOW_HOSTS")


async def test_list_change_unsubscribe_each_user_their_own(call: Call, site: FakeSite, site_url: str,
                                                          bob: Caller, alice: Caller, outside_fable: Fable) -> None:
    site.put("/news.xml", NEWS, "application/rss+xml")
    site.put("/blog.atom", atom("Blog", [("Only", "text")]), "application/atom+xml")
    news = await call("subscribe_feed", url=f"{site_url}/news.xml", category="news")
    blog = await call("subscribe_feed", url=f"{site_url}/blog.atom")
    with pytest.raises(Conflict, match="you already subscribe"):
        await call("subscribe_feed", url=f"{site_url}/news.xml")
    bobs = await call("subscribe_feed", url=f"{site_url}/news.xml", as_=bob)  # his own subscription
    assert [f["name"] for f in (await call("list_feeds"))["feeds"]] == ["Blog", "Daily News"]
    assert [f["name"] for f in (await call("list_feeds", category="news"))["feeds"]] == ["Daily News"]
    first = await call("list_feeds", limit=1)
    second = await call("list_feeds", limit=1, cursor=first["next_cursor"])
    assert [f["name"] for f in first["feeds"] + second["feeds"]] == ["Blog", "Daily News"]
    assert "next_cursor" not in second
    changed = await outside_fable.call("update_feed", {"feed_id": blog["id"], "name": "My blog",
                                                       "category": "friends"}, alice)
    assert (changed["name"], changed["category"], changed["items"]) == ("My blog", "friends", 1)
    for tool, args in (("update_feed", {"feed_id": bobs["id"], "category": "x"}),
                       ("unsubscribe_feed", {"feed_id": bobs["id"]}), ("list_feed_items", {"feed_id": bobs["id"]}),
                       ("refresh_feeds", {"feed_id": bobs["id"]})):
        with pytest.raises(NotFound, match=f"feed {bobs['id']} not found"):
            await call(tool, **args)
    assert await call("unsubscribe_feed", feed_id=news["id"]) == {"id": news["id"], "deleted": True}
    assert [i["title"] for i in (await call("list_feed_items"))["items"]] == ["Only"]
    assert len((await call("list_feed_items", as_=bob))["items"]) == 2


BAD = [{"url": ""}, {"url": "ftp://example.org/feed"}, {"url": "http://x/" + "a" * 2000},
       {"url": "https://example.org/f", "name": "n" * 201}, {"url": "https://example.org/f", "category": "c" * 101},
       {"url": "https://example.org/f", "name": "   "}]


async def test_bad_input_is_refused_on_every_surface_and_changes_nothing(
        call: Call, api: Api, alice: Caller, outside_fable: Fable, outside_url: str, site: FakeSite) -> None:
    for args in BAD:
        with pytest.raises(InvalidInput):
            await outside_fable.call("subscribe_feed", args, alice)
    with pytest.raises(InvalidInput, match="give a name or a category"):
        await call("update_feed", feed_id=1)
    with pytest.raises(InvalidInput, match="give item_ids"):
        await call("mark_feed_items_read")
    async with api(alice) as http:
        for args in BAD:
            bad = await http.post("/feeds", json=args)
            assert bad.status_code == 422 and bad.json()["error"]["type"] in ("invalid_input", "blocked_url"), args
        for path, params in (("/feed-items", {"limit": "0"}), ("/feed-items", {"cursor": "junk"}),
                             ("/feed-items/search", {"query": ""}), ("/feed-items/search", {"limit": "21"})):
            assert (await http.get(path, params=params)).status_code == 422, (path, params)
        assert (await http.post("/feed-items/0/note")).status_code == 422
        assert (await http.delete("/feeds/99")).status_code == 404
    key = await make_key(outside_fable, alice)
    async with http_connect(f"{outside_url}/mcp", key) as client:
        result = await client.call_tool("subscribe_feed", {"url": "gopher://example.org/"})
        assert result.is_error and "only http and https" in result.content[0].text
        result = await client.call_tool("list_feeds", {})
        assert not result.is_error and data(result) == {"feeds": []}
    assert site.requests == []


async def test_a_feed_cannot_read_local_files_through_external_entities(call: Call, site: FakeSite,
                                                                        site_url: str) -> None:
    site.put("/xxe.xml", '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
             '<rss version="2.0"><channel><title>T</title><item><title>Hi &x;</title><guid>1</guid>'
             "<description>&x;</description></item></channel></rss>", "application/rss+xml")
    await call("subscribe_feed", url=f"{site_url}/xxe.xml")
    [item] = (await call("list_feed_items", full=True))["items"]
    assert "root:" not in str(item)
