"""Fixtures for the CalDAV sync: a real Radicale per test, and a Fable allowed to reach it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.caldav_server import Radicale, radicale_server
from support.users import quick_user

from fable_core.runtime import Fable

alice = quick_user("alice")
bob = quick_user("bob")


@pytest.fixture
def radicale(tmp_path: Path) -> Iterator[Radicale]:
    """Radicale on a free port: users ana and ben, each with a calendar at /<user>/calendar/."""
    with radicale_server(tmp_path / "radicale") as server:
        yield server


@pytest.fixture
def sync_fable(fable: Fable, radicale: Radicale) -> Fable:
    """The session's Fable (same database) with the operator letting Radicale's port through."""
    return Fable(fable.settings.model_copy(update={"fable_caldav_allow_hosts": [radicale.host]}), fable.db)
