"""Signing in with a password: the account checked, and the attempt audited either way.

The surface that signs a person in (it sets the session cookie, so it is no tool) calls
:func:`sign_in` and starts the session; what is recorded of the attempt is decided here, once:
``auth.sign_in`` for the account, ``auth.sign_in_failed`` with the name tried (never the
password). The password is checked with no connection held (:func:`accounts.authenticate`).
"""

from __future__ import annotations

from fable_core.admin.audit import Actor, audit
from fable_core.db.database import Database
from fable_core.db.models import User
from fable_core.errors import Unauthenticated
from fable_core.identity import accounts

__all__ = ["sign_in"]


async def sign_in(db: Database, username: str, password: str, *, ip: str) -> User:
    """The active account with this name and password, its sign-in audited; Unauthenticated
    (audited as a failure) otherwise."""
    try:
        user = await accounts.authenticate(db, username, password)
    except Unauthenticated:
        async with db.transaction() as session:
            await audit(session, Actor(None, username[:64], "web"), "auth.sign_in_failed", ip=ip)
        raise
    async with db.transaction() as session:
        await audit(session, Actor(user.id, user.username, "web"), "auth.sign_in", ip=ip)
    return user
