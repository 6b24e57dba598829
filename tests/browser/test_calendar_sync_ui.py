"""Settings → Calendar sync in Chromium against a real Radicale: connect (a wrong password
refused in the form), discover and choose a calendar, Sync now, and the status when the server
is down."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import date
from pathlib import Path

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.caldav_server import radicale_running
from support.servers import serve

from fable_core.daily.calendar.service import EventFields, create_event
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

pytestmark = pytest.mark.browser


async def test_connect_choose_a_calendar_sync_now_and_see_the_status(
        fable: Fable, session_at: Callable[[str], AbstractAsyncContextManager[Session]], tmp_path: Path) -> None:
    async with radicale_running(tmp_path / "radicale") as radicale:
        await asyncio.to_thread(lambda: radicale.client("ana").principal().make_calendar(name="Work", cal_id="work"))
        local = Fable(fable.settings.model_copy(update={"fable_caldav_allow_hosts": [radicale.host]}), fable.db)
        async with serve(create_app(local)) as url, session_at(url) as ui:
            page = ui.page
            await ui.register("cora")
            me = (await ui.api("GET", "/auth/me"))["user"]
            async with local.db.transaction() as session:
                await create_event(session, Caller(user_id=me["id"]),
                                   EventFields(title="Dentist", start=date(2026, 12, 14)))
            await page.goto("/settings/calendar-sync")
            await expect(page.locator("#caldav-status")).to_contain_text("Not connected")

            await page.get_by_label("CalDAV URL").fill(radicale.url)
            await page.get_by_label("Username").fill("ana")
            await page.get_by_label("Password").fill("not-her-password")
            await page.get_by_role("button", name="Connect and discover").click()
            await expect(page.locator("#caldav-error")).to_contain_text("refused this username and password")
            await expect(page.locator("#caldav-status")).to_contain_text("Not connected")

            await page.get_by_label("Password").fill("ana-secret")
            await page.get_by_role("button", name="Connect and discover").click()
            await expect(page.locator("#caldav-calendar-name")).to_contain_text("choose one")
            await expect(page.get_by_role("button", name="Sync now")).to_be_disabled()
            await page.get_by_role("radio", name=re.compile("Work")).check()
            await expect(page.locator("#caldav-calendar-name")).to_have_text("Work")
            await expect(page.get_by_label("Password")).to_have_value("")

            await page.get_by_role("button", name="Sync now").click()
            await expect(page.locator("#toasts")).to_contain_text("Synced: 0 in, 1 out")
            await expect(page.locator("#caldav-last-success")).not_to_have_text("never")
            work = radicale.client("ana").calendar(url=f"{radicale.url}ana/work/")
            events = await asyncio.to_thread(work.events)
            assert [o.icalendar_component["summary"] for o in events] == ["Dentist"]

            await asyncio.to_thread(radicale.stop)
            await page.get_by_role("button", name="Sync now").click()
            await expect(page.locator("#caldav-last-error")).to_contain_text("cannot reach the CalDAV server")
            await expect(page.locator("#caldav-error")).to_contain_text("cannot reach the CalDAV server")
            await expect(page.locator("#caldav-next")).to_be_visible()
            await asyncio.to_thread(radicale.start)

            await page.get_by_role("button", name="Disconnect").click()
            await expect(page.locator("#caldav-status")).to_contain_text("Not connected")
            assert not ui.watch.errors
