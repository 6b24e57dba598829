"""Connecting a CalDAV account: checked against a real Radicale, the password sealed and never
returned, the calendar chosen from discovery; bad input stores nothing."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from sqlalchemy import select
from support.caldav_server import Radicale
from support.servers import free_port

from fable_core.daily.caldav.accounts import PURPOSE
from fable_core.db.models import CaldavAccount
from fable_core.errors import InvalidInput, NotFound, Unavailable
from fable_core.infra.sealed import unseal
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server


async def _accounts(fable: Fable) -> list[CaldavAccount]:
    async with fable.db.reading() as session:
        return list((await session.execute(select(CaldavAccount))).scalars())


def _login(radicale: Radicale, user: str = "ana", **changes: Any) -> dict[str, Any]:
    return {"url": radicale.url, "username": user, "password": radicale.users[user]} | changes


async def test_connecting_lists_the_calendars_chooses_the_only_one_and_seals_the_password(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    result = await sync_fable.call("connect_caldav", _login(radicale), alice)
    assert result == {"calendars": [{"href": "/ana/calendar/", "name": "ana's calendar"}],
                      "chosen": "/ana/calendar/"}
    [account] = await _accounts(sync_fable)
    assert radicale.users["ana"] not in account.password_sealed
    assert unseal(account.password_sealed, sync_fable.settings.secret_key(), PURPOSE) == "ana-secret"
    status = await sync_fable.call("get_caldav_status", {}, alice)
    assert status["connected"] and status["calendar"] == "ana's calendar" and "ana-secret" not in str(status)
    assert set(status) == {"connected", "url", "username", "calendar", "calendar_href", "next_attempt_at"}


async def test_with_several_calendars_the_user_chooses_one_from_discovery(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    radicale.client("ana").principal().make_calendar(name="Work", cal_id="work")
    listed = await sync_fable.call("connect_caldav", _login(radicale), alice)
    assert [c["name"] for c in listed["calendars"]] == ["ana's calendar", "Work"] and "chosen" not in listed
    assert await sync_fable.call("list_caldav_calendars", {}, alice) == listed
    status = await sync_fable.call("choose_caldav_calendar", {"calendar": "/ana/work/"}, alice)
    assert status["calendar"] == "Work" and status["calendar_href"] == "/ana/work/"
    with pytest.raises(InvalidInput, match="no calendar '/ben/calendar/' for this login"):
        await sync_fable.call("choose_caldav_calendar", {"calendar": "/ben/calendar/"}, alice)
    assert (await _accounts(sync_fable))[0].calendar_href == "/ana/work/"


async def test_a_wrong_password_is_a_clear_error_and_stores_nothing(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    with pytest.raises(InvalidInput, match="refused this username and password"):
        await sync_fable.call("connect_caldav", _login(radicale, password="wrong"), alice)
    assert await _accounts(sync_fable) == []


async def test_a_wrong_password_keeps_the_account_that_was_connected(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    await sync_fable.call("connect_caldav", _login(radicale), alice)
    with pytest.raises(InvalidInput, match="refused"):
        await sync_fable.call("connect_caldav", _login(radicale, "ben", password="nope"), alice)
    [account] = await _accounts(sync_fable)
    assert (account.username, account.calendar_href) == ("ana", "/ana/calendar/")


async def test_an_unreachable_server_is_a_clear_error_and_stores_nothing(fable: Fable, alice: Caller) -> None:
    host = f"127.0.0.1:{free_port()}"
    local = Fable(fable.settings.model_copy(update={"fable_caldav_allow_hosts": [host]}), fable.db)
    with pytest.raises(Unavailable, match="cannot reach the CalDAV server"):
        await local.call("connect_caldav", {"url": f"http://{host}/", "username": "a", "password": "b"}, alice)
    assert await _accounts(fable) == []


@pytest.mark.parametrize(("url", "message"), [
    ("https://127.0.0.1/dav/", "not public"),
    ("https://10.1.2.3:8443/", "not public"),
    ("https://[::1]/", "not public"),
    ("http://example.com/dav/", "must be an https URL"),
    ("ftp://example.com/", "must be an https URL"),
    ("https://exa mple.com:99999/", "bad port|cannot be parsed|cannot be used"),
])
async def test_a_url_that_is_not_public_or_not_https_is_refused(
        fable: Fable, alice: Caller, url: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        await fable.call("connect_caldav", {"url": url, "username": "a", "password": "b"}, alice)
    assert await _accounts(fable) == []


async def test_the_allowed_host_is_only_the_port_named(
        fable: Fable, radicale: Radicale, alice: Caller) -> None:
    other = Fable(fable.settings.model_copy(update={"fable_caldav_allow_hosts": ["127.0.0.1:1"]}), fable.db)
    with pytest.raises(InvalidInput, match="must be an https URL"):
        await other.call("connect_caldav", _login(radicale), alice)
    with pytest.raises(InvalidInput, match="not public"):
        await other.call("connect_caldav", _login(radicale, url=radicale.url.replace("http:", "https:")), alice)


async def test_each_user_sees_only_their_own_account_and_disconnect_forgets_it(
        sync_fable: Fable, radicale: Radicale, alice: Caller, bob: Caller) -> None:
    await sync_fable.call("connect_caldav", _login(radicale), alice)
    assert await sync_fable.call("get_caldav_status", {}, bob) == {"connected": False}
    with pytest.raises(NotFound, match="no CalDAV account"):
        await sync_fable.call("list_caldav_calendars", {}, bob)
    assert await sync_fable.call("disconnect_caldav", {}, bob) == {"connected": False}
    assert len(await _accounts(sync_fable)) == 1
    assert await sync_fable.call("disconnect_caldav", {}, alice) == {"connected": False}
    assert await _accounts(sync_fable) == []


async def test_the_configuration_tools_are_not_offered_to_agents(fable: Fable) -> None:
    offered = {t.name for t in fable.registry if t.agents and t.module.startswith("fable_core.daily.caldav")}
    assert not offered & {"connect_caldav", "list_caldav_calendars", "choose_caldav_calendar",
                          "get_caldav_status", "disconnect_caldav"}


async def test_over_mcp_a_sync_without_an_account_is_a_clear_tool_error(fable: Fable, alice: Caller) -> None:
    async with Client(build_server(fable, alice)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("sync_calendar", {})
        bad = await client.call_tool("list_event_versions", {"limit": 1000})
    assert {"sync_calendar", "list_event_versions"} <= names and "connect_caldav" not in names
    assert result.is_error and "no CalDAV account is connected" in result.content[0].text
    assert bad.is_error and "limit" in bad.content[0].text


async def test_a_new_password_for_the_same_login_keeps_the_chosen_calendar_and_the_sync(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    radicale.client("ana").principal().make_calendar(name="Work", cal_id="work")
    await sync_fable.call("connect_caldav", _login(radicale), alice)
    await sync_fable.call("choose_caldav_calendar", {"calendar": "/ana/work/"}, alice)
    async with sync_fable.db.transaction() as session:
        account = await session.get(CaldavAccount, alice.user_id)
        assert account is not None
        account.sync_token, account.last_error, account.failures = "a-token", "refused", 3
    again = await sync_fable.call("connect_caldav", _login(radicale), alice)
    assert again["chosen"] == "/ana/work/"
    [account] = await _accounts(sync_fable)
    assert (account.calendar_href, account.sync_token, account.last_error, account.failures) == (
        "/ana/work/", "a-token", None, 0)
    other = await sync_fable.call("connect_caldav", _login(radicale, "ben"), alice)  # another login: starts over
    assert other["chosen"] == "/ben/calendar/"
    [account] = await _accounts(sync_fable)
    assert (account.username, account.sync_token) == ("ben", None)
