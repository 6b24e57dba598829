"""What a restore may write: a user's own archive only the tables a personal backup holds, and
only rows of that account; an instance archive only in person (a signed-in admin, the operator).

The attack of security round 3: bob's personal archive, edited to carry ``instance_settings``
(registration opened, the mail server pointed at his own), ``user_identities`` (an OIDC link to
carol's account) and an ``app_logs`` row, was restored (200) and took carol's account over.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from support.backup import blob, with_rows, with_table
from support.mcp_clients import make_key

from fable_core.db.models import AppLog, InstanceSetting, Note, UserIdentity
from fable_core.errors import Forbidden, InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


async def _count(fable: Fable, model: type) -> int:
    async with fable.db.reading() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def test_a_personal_archive_carrying_instance_tables_is_refused_whole(
    fable: Fable, world: dict[str, Any], bob: Caller
) -> None:
    mine = await blob(fable, "backup_mine", bob)
    crafted = {
        "instance_settings": (["key", "value"], [["registration", "open"], ["smtp", {"host": "evil.example"}]]),
        "user_identities": (["id", "user_id", "issuer", "subject"], [[1, 1, "https://evil.example", "carol"]]),
        "app_logs": (["id", "category", "action"], [[999, "audit", "forged"]]),
    }
    counts = {m: await _count(fable, m) for m in (Note, InstanceSetting, UserIdentity)}
    for name, (columns, rows) in crafted.items():
        with pytest.raises(InvalidInput, match=f"a personal backup holds '{name}'"):
            await fable.call("restore_backup", {"archive_file": with_table(mine, name, columns, rows)}, bob)
    assert {m: await _count(fable, m) for m in counts} == counts
    async with fable.db.reading() as session:
        assert await session.scalar(select(func.count()).where(AppLog.action == "forged")) == 0


async def test_a_personal_archive_with_another_accounts_rows_is_refused(
    fable: Fable, world: dict[str, Any], alice: Caller, bob: Caller
) -> None:
    mine = await blob(fable, "backup_mine", bob)

    def alices(columns: list[str], rows: list[list[Any]]) -> list[list[Any]]:
        at = columns.index("user_id")
        return [[*r[:at], alice.user_id, *r[at + 1:]] for r in rows] or [[None] * len(columns)]

    before = await _count(fable, Note)
    with pytest.raises(InvalidInput, match="belongs to another account than the backup's"):
        await fable.call("restore_backup", {"archive_file": with_rows(mine, "settings", alices)}, bob)
    assert await _count(fable, Note) == before


async def test_an_instance_archive_is_restored_in_person_only(fable: Fable, world: dict[str, Any],
                                                              alice: Caller) -> None:
    """An admin's API key neither downloads nor restores the whole instance."""
    archive = await blob(fable, "backup_instance", alice)  # in person (the test's caller is local)
    key = await make_key(fable, alice)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(fable)), base_url="http://localhost/api",
                                 headers={"Authorization": f"Bearer {key}"}) as http:
        restored = await http.post("/backups/restore", content=archive, headers={"Content-Type": "application/zip"})
        assert restored.status_code == 403 and restored.json()["error"]["details"]["reason"] == "session_only"
        assert (await http.get("/logs", params={"category": "audit"})).status_code == 403
    with pytest.raises(Forbidden, match="signed-in session"):
        await fable.call("backup_instance", {}, Caller(user_id=alice.user_id, role="admin", credential="oauth"))
