"""DATABASE_READ_URL: read like DATABASE_URL (with a ``_FILE`` variant), checked at startup,
and nothing of the replica routing when it is unset."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import func, select

from fable_core.config import Settings, load_settings
from fable_core.db.database import Database
from fable_core.db.models import RecentWrite
from fable_core.db.replica import lsn
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


def test_readrep_the_url_comes_from_the_variable_or_its_file(tmp_path: Path) -> None:
    secret = tmp_path / "read-url"
    secret.write_text("postgresql://fable:s3cret@replica/fable\n")
    assert load_settings({"DATABASE_READ_URL_FILE": str(secret)}).database_read_url == \
        "postgresql://fable:s3cret@replica/fable"
    assert load_settings({"DATABASE_READ_URL": "postgres://r/f"}).database_read_url == "postgres://r/f"
    with pytest.raises(InvalidInput, match="FABLE_READ_YOUR_WRITES_SECONDS"):
        load_settings({"FABLE_READ_YOUR_WRITES_SECONDS": "0"})


async def test_readrep_a_url_that_is_not_postgresql_is_refused_by_name(settings: Settings) -> None:
    with pytest.raises(InvalidInput, match="DATABASE_READ_URL must be a PostgreSQL URL"):
        await Database.open(settings.model_copy(update={"database_read_url": "mysql://r/fable"}), migrate=False)


async def test_readrep_without_a_replica_writes_stamp_nothing(fable: Fable, alice: Caller) -> None:
    assert fable.db.replica is None
    await fable.call("create_note", {"title": "No replica"}, replace(alice, surface="mcp"))
    async with fable.db.reading() as session:
        assert await session.scalar(select(func.count()).select_from(RecentWrite)) == 0


def test_readrep_wal_positions_compare_as_numbers() -> None:
    assert lsn("16/B374D848") == (0x16 << 32) + 0xB374D848
    assert lsn("0/FFFFFFFF") < lsn("1/0") and lsn(None) == 0
