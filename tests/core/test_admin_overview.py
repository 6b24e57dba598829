"""The admin's account overview counts notes and storage for every account in one statement."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from support.users import make_user

from fable_core.identity import users as admin
from fable_core.runtime import Fable


@contextmanager
def statements(fable: Fable, connection: Any) -> Iterator[list[str]]:
    """The statements run on ``connection`` (a session's): not those of the background work
    sharing the engine, such as the change feed announcing the notes just created."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if conn is connection:
            seen.append(statement)

    engine = fable.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


async def test_one_statement_whatever_the_number_of_accounts(fable: Fable, call) -> None:
    people = [await make_user(fable, f"user{i}", password=None) for i in range(4)]
    for i, person in enumerate(people):
        for n in range(i):
            await call("create_note", title=f"n{n}", body="x" * 10, as_=person)
    async with fable.db.reading() as session:
        connection = (await session.connection()).sync_connection
        with statements(fable, connection) as seen:
            overview = await admin.account_overview(session)
    assert len(seen) == 1
    counts = {row["username"]: (row["notes"], row["storage_bytes"] > 0) for row in overview}
    assert counts == {"alice": (0, False), "user0": (0, False), "user1": (1, True), "user2": (2, True),
                      "user3": (3, True)}
