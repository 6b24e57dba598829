"""A database that answers but cannot write (issue 36, item 6): here a real read-only one (every
new session read-only, as on a standby or an operator's lock-down; a full disk fails writes the
same way, with its own SQLSTATE). A write is refused with the reason and nothing of the
server's internals; health says ``degraded`` with that reason, still 200 (reads work); reads do."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import make_url
from support.databases import fresh_database, sql
from support.users import make_user

from fable_core.config import Settings
from fable_core.errors import Unavailable
from fable_core.runtime import Fable
from fable_web.app import create_app


@pytest.fixture
async def fresh_url(fable: Fable, database_url: str) -> AsyncIterator[str]:
    async with fresh_database(database_url, "fable_ro") as url:
        yield url


async def test_writes_refused_by_a_read_only_database_say_why_and_health_is_degraded(
    settings: Settings, fresh_url: str
) -> None:
    app = await Fable.open(settings.model_copy(update={"database_url": fresh_url}))
    try:
        erin = await make_user(app, "erin", password=None)
        await app.call("create_note", {"title": "Before", "body": "written while it could"}, erin)
        name = make_url(fresh_url).database
        await sql(fresh_url, f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        await app.db.engine.dispose()  # the setting holds for new sessions
        with pytest.raises(Unavailable) as refused:
            await app.call("create_note", {"title": "After", "body": "refused"}, erin)
        said = str(refused.value)
        assert said == "the database cannot write: it is read-only; nothing was written", said
        transport = httpx.ASGITransport(create_app(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            health = await http.get("/api/health")
        assert health.status_code == 200
        assert health.json()["status"] == "degraded"
        assert health.json()["database"]["error"] == "writes fail: it is read-only"
        assert [n["title"] for n in (await app.call("list_notes", {}, erin))["items"]] == ["Before"]
    finally:
        await app.close()
