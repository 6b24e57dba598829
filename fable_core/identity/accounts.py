"""Users and API keys: creation, sign-in, passwords, email addresses, invitations, admin.

Passwords are hashed with argon2id off the event loop (:mod:`fable_core.identity.passwords`). API keys
look like ``fable_<prefix>_<secret>``; only their SHA-256 hash is stored, with the short prefix
kept for display. Keys are scoped ``read`` or ``write``. The first user of an instance becomes
its admin.

Email addresses are stored lower-cased and are *unverified* until their owner opens the link
mailed to them (or registers with an invitation made for that address): only a verified
address receives password resets, and a verified address belongs to one account, so nobody can
claim someone else's address and have its resets sent to them.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.admin.instance import registration_mode
from fable_core.config import Settings
from fable_core.db.models import AccountToken, ApiKey, LoginSession, Note, Project, Share, User, UserIdentity
from fable_core.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthenticated
from fable_core.identity import login_sessions
from fable_core.identity.account_tokens import discard_tokens, issue_token, redeem_token
from fable_core.identity.invitations import DEFAULT_TTL, issue_invitation
from fable_core.identity.passwords import Hashed, check_password, hash_password, verify_nobody, verify_password
from fable_core.identity.revocations import announce
from fable_core.tools.access import of_user
from fable_core.tools.caller import Caller, Scope

if TYPE_CHECKING:
    from fable_core.db.database import Database

__all__ = [
    "INVITE_TTL",
    "RESET_TTL",
    "ROLES",
    "USER_CREATION_LOCK",
    "VERIFY_TTL",
    "account_names",
    "account_view",
    "api_key_view",
    "authenticate",
    "caller_for_key",
    "change_email",
    "change_password",
    "count_owned",
    "count_users",
    "create_api_key",
    "create_invitation",
    "create_user",
    "delete_user",
    "find_user",
    "get_user",
    "list_api_keys",
    "list_every_api_key",
    "list_users",
    "normalise_email",
    "only_user",
    "register_user",
    "request_email_verification",
    "request_password_reset",
    "reset_password",
    "revoke_any_api_key",
    "revoke_api_key",
    "set_active",
    "set_password",
    "set_role",
    "sole_user",
    "user_view",
    "verify_email",
]

# Held for the rest of a transaction that creates a user: the "is the name free" check and the
# "first user is admin" count must see every user committed before.
USER_CREATION_LOCK = 0x0F_AB_1E_01
# Held by a transaction that takes an admin away (disable, demote, delete): two admins demoting
# each other at once must not both see the other one still there.
_ADMINS_LOCK = 0x0F_AB_1E_02
ROLES = ("user", "admin")

_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{1,63}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
INVITE_TTL = DEFAULT_TTL
RESET_TTL = timedelta(hours=1)
VERIFY_TTL = timedelta(days=2)


def normalise_email(email: str | None) -> str | None:
    """An address as stored: stripped, lower-cased; InvalidInput when it is not one."""
    if email is None:
        return None
    email = email.strip().lower()
    if not _EMAIL.match(email) or len(email) > 320:
        raise InvalidInput(f"{email[:100]!r} is not an email address", field="email")
    return email


async def create_user(
    session: AsyncSession,
    username: str,
    password: Hashed | str | None = None,
    *,
    email: str | None = None,
    role: str | None = None,
) -> User:
    """Create a user; the first one on the instance is an admin unless told otherwise.

    Creations are serialised by a transaction lock (the one :func:`register_user` takes), so the
    check that the name is free and the count that makes the first user an admin see every user
    committed before: two processes creating the same user at once get one row and a Conflict,
    never a unique violation from the database.
    """
    if not _USERNAME.match(username or ""):
        raise InvalidInput(
            f"username {username!r} must be 2-64 letters, digits, '.', '_' or '-'", field="username"
        )
    await session.execute(select(func.pg_advisory_xact_lock(USER_CREATION_LOCK)))
    taken = await session.scalar(select(User.id).where(func.lower(User.username) == username.lower()))
    if taken is not None:
        raise Conflict(f"username {username!r} is taken", field="username")
    if role is None:
        role = "admin" if not await session.scalar(select(func.count(User.id))) else "user"
    user = User(
        username=username,
        email=normalise_email(email),
        password_hash=None if password is None else password if isinstance(password, Hashed)
        else await hash_password(password),
        role=role,
    )
    session.add(user)
    await session.flush()
    return user


async def find_user(session: AsyncSession, username: str) -> User:
    user = await session.scalar(select(User).where(func.lower(User.username) == username.lower()))
    if user is None:
        raise NotFound(f"no user named {username!r}", username=username)
    return user


async def authenticate(db: Database, username: str, password: str) -> User:
    """The active user with this name and password; Unauthenticated (same message, same time)
    otherwise. The account is read, then the password checked with no connection held."""
    async with db.reading() as session:
        user = await session.scalar(select(User).where(func.lower(User.username) == (username or "").lower()))
    if user is None or not user.is_active:
        await verify_nobody(password)
        raise Unauthenticated("wrong username or password")
    if not await verify_password(user.password_hash, password):
        raise Unauthenticated("wrong username or password")
    return user


async def checked_password(db: Database, user_id: int, password: str, *, field: str = "current_password") -> str | None:
    """The account's current hash once ``password`` matches it (checked with no connection
    held); InvalidInput naming ``field`` when it does not. Hand it to the transaction that acts,
    which refuses if the hash changed meanwhile (:func:`_still`)."""
    async with db.reading() as session:
        current = await session.scalar(select(User.password_hash).where(User.id == user_id))
    if not await verify_password(current, password):
        raise InvalidInput("the current password is wrong", field=field)
    return current


def _still(user: User, checked: str | None) -> None:
    if user.password_hash != checked:
        raise Conflict("the password changed meanwhile: try again with the new one", field="current_password")


async def _set_password(session: AsyncSession, user: User, new_password: Hashed | str, *,
                        keep_session: int | None) -> None:
    """Store a new hash; every session but ``keep_session`` ends and no reset link sent before
    works any more."""
    user.password_hash = new_password if isinstance(new_password, Hashed) else await hash_password(new_password)
    await session.flush()
    await login_sessions.end_others(session, user.id, keep_session)
    await discard_tokens(session, "reset", user.id)


async def change_password(
    session: AsyncSession, user_id: int, checked: str | None, new_password: Hashed, *,
    keep_session: int | None = None,
) -> User:
    """Change a password whose current one was checked (:func:`checked_password`, the hash it
    matched); every other session ends."""
    user = await session.get(User, user_id, with_for_update=True)
    if user is None:
        raise Unauthenticated("no such user")
    _still(user, checked)
    await _set_password(session, user, new_password, keep_session=keep_session)
    return user


async def register_user(
    session: AsyncSession,
    username: str,
    password: Hashed,
    *,
    email: str | None = None,
    invitation: str | None = None,
    settings: Settings,
) -> User:
    """Self-service sign-up: the first account always; later ones as the registration mode
    says (:func:`fable_core.admin.instance.registration_mode`): ``open`` admits anyone (and takes
    invitations), ``invite`` only a valid invitation, ``closed`` nobody.

    An invitation is redeemed in the same transaction, so it works exactly once. One made for
    an address admits only that address, which it verifies (the admin vouched for it).
    """
    email = normalise_email(email)  # ``password`` was checked and hashed before the transaction opened
    await session.execute(select(func.pg_advisory_xact_lock(USER_CREATION_LOCK)))  # first-user race
    first = not await session.scalar(select(func.count(User.id)))
    mode = "open" if first else await registration_mode(session, settings)
    if mode == "closed":
        raise Forbidden("registration is closed: an admin creates accounts on this instance", reason="closed")
    if mode == "invite" and not invitation:
        raise Forbidden("registration is by invitation only; ask an admin for an invitation link",
                        reason="invite_only")
    verified = False
    if invitation:
        invite = await redeem_token(session, "invite", invitation)
        if invite.email is not None:
            if email not in (None, invite.email):
                raise InvalidInput("this invitation is for another email address", field="email")
            email, verified = invite.email, True
    user = await create_user(session, username, password, email=email)
    if verified:
        await _mark_verified(session, user)
    return user


async def create_invitation(
    session: AsyncSession, admin: User | int | None, email: str | None = None, ttl: timedelta = INVITE_TTL,
    *, settings: Settings,
) -> tuple[AccountToken, str]:
    """An invitation token (valid ``ttl``, once) that admits one registration; made for an
    address, it admits only that address. Refused while registration is closed (nobody could
    use it)."""
    if await registration_mode(session, settings) == "closed":
        raise Conflict("registration is closed, so an invitation could not be used: allow registration "
                       "by invitation first", field="registration")
    admin_id = admin if isinstance(admin, int) or admin is None else admin.id
    return await issue_invitation(session, admin_id, normalise_email(email), ttl)


async def request_password_reset(
    session: AsyncSession, login: str
) -> tuple[User, str] | None:
    """A reset token for the active user with this username or verified email, or None if
    there is no such user with a verified address (callers answer the same either way:
    existence must not leak)."""
    login = (login or "").strip().lower()
    user = await session.scalar(
        select(User).where(
            (func.lower(User.username) == login) | (User.email == login),
            User.is_active.is_(True), User.email_verified_at.is_not(None),
        ).limit(1)
    )
    if user is None or not user.email:
        return None
    _, token = await issue_token(session, "reset", RESET_TTL, user_id=user.id)
    return user, token


async def reset_password(session: AsyncSession, token: str, new_password: Hashed) -> User:
    """Set a new password (hashed before the transaction) with a reset token; the token is
    spent, every session ends and every other reset link stops working."""
    row = await redeem_token(session, "reset", token)
    user = await session.get(User, row.user_id, with_for_update=True)
    if user is None or not user.is_active:
        raise InvalidInput("this password reset link is unknown", field="token", reason="unknown")
    await _set_password(session, user, new_password, keep_session=None)
    return user


# --- email addresses ----------------------------------------------------------------------------


async def request_email_verification(session: AsyncSession, user: User) -> str | None:
    """A verification token for the user's unverified address (None when there is nothing to
    verify); earlier ones stop working."""
    if not user.email or user.email_verified_at is not None:
        return None
    await discard_tokens(session, "verify", user.id)
    _, token = await issue_token(session, "verify", VERIFY_TTL, user_id=user.id, email=user.email)
    return token


async def verify_email(session: AsyncSession, token: str) -> User:
    """Mark the address a verification link was sent to as verified (once; only if it is still
    the account's address)."""
    row = await redeem_token(session, "verify", token)
    user = await session.get(User, row.user_id, with_for_update=True)
    if user is None or not user.is_active or user.email != row.email:
        raise InvalidInput("this email verification link is for an address the account no longer has",
                           field="token", reason="stale")
    await _mark_verified(session, user)
    return user


async def _mark_verified(session: AsyncSession, user: User) -> None:
    taken = await session.scalar(select(User.id).where(
        User.email == user.email, User.email_verified_at.is_not(None), User.id != user.id))
    if taken is not None:
        raise Conflict("this email address is already verified on another account", field="email")
    user.email_verified_at = datetime.now(UTC)
    await session.flush()


async def change_email(session: AsyncSession, user_id: int, checked: str | None, email: str | None, *,
                       login_session: int | None = None) -> User:
    """Change (or with None remove) the account's address; ``checked`` is the hash the password
    given matched (:func:`checked_password`, None when none was given). A new address starts
    unverified. An account without a password (one that signs in with its OIDC provider only)
    proves itself by a recent sign-in instead: ``login_session``, the caller's session, must be
    at most :data:`REAUTH_WINDOW` old (see :func:`_check_recent_sign_in`)."""
    user = await session.get(User, user_id, with_for_update=True)
    if user is None:
        raise Unauthenticated("no such user")
    email = normalise_email(email)
    if user.password_hash is not None:
        if checked is None:
            raise InvalidInput("give your current password", field="password")
        _still(user, checked)
    else:
        await _check_recent_sign_in(session, user, login_session)
    if email != user.email:
        user.email, user.email_verified_at = email, None
        await discard_tokens(session, "verify", user.id)
        await discard_tokens(session, "reset", user.id)
        await session.flush()
    return user


REAUTH_WINDOW = timedelta(minutes=10)
"""How recent a password-less account's sign-in must be for it to change its email."""


async def _check_recent_sign_in(session: AsyncSession, user: User, login_session: int | None) -> None:
    """A password-less account's stand-in for the password: it is linked to an OIDC identity and
    the caller's session began within :data:`REAUTH_WINDOW`. Such an account gets a session only
    from its provider's sign-in (password sign-in, registration, resets and invitations all set a
    password), so a fresh session is a fresh sign-in at the provider; an old or stolen cookie is
    not enough. Forbidden (``reason="reauthenticate"``) otherwise: sign in again, then retry."""
    linked = await session.scalar(select(func.count()).select_from(UserIdentity)
                                  .where(UserIdentity.user_id == user.id))
    started = None
    if login_session is not None:
        started = await session.scalar(select(LoginSession.created_at).where(
            LoginSession.id == login_session, LoginSession.user_id == user.id))
    if not linked or started is None or started < datetime.now(UTC) - REAUTH_WINDOW:
        minutes = int(REAUTH_WINDOW.total_seconds() // 60)
        raise Forbidden(f"sign in again with your identity provider, then change your email within {minutes} minutes",
                        reason="reauthenticate", within_minutes=minutes)


# --- views and lookups for the surfaces ---------------------------------------------------------


def user_view(user: User) -> dict[str, Any]:
    """What a user sees of their own account."""
    return {
        "id": user.id, "username": user.username, "email": user.email,
        "email_verified": user.email_verified_at is not None, "role": user.role,
        "created_at": user.created_at.isoformat() if user.created_at else None,
    }


def account_view(user: User) -> dict[str, Any]:
    """What an admin sees of an account."""
    return {**user_view(user), "is_active": user.is_active,
            "last_login_at": user.last_login_at.isoformat() if user.last_login_at else None}


def api_key_view(row: ApiKey) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "prefix": row.prefix, "scope": row.scope,
            "created_at": row.created_at.isoformat(),
            "last_used_at": row.last_used_at.isoformat() if row.last_used_at else None}


async def get_user(session: AsyncSession, user_id: int) -> User:
    user = await session.get(User, user_id)
    if user is None:
        raise NotFound(f"user {user_id} not found", user_id=user_id)
    return user


async def count_users(session: AsyncSession) -> int:
    return await session.scalar(select(func.count(User.id))) or 0


async def account_names(session: AsyncSession, limit: int) -> list[str]:
    """The first ``limit`` accounts' names, oldest first (what a command without ``--user`` names
    when it cannot tell whose it is)."""
    return list((await session.execute(select(User.username).order_by(User.id).limit(limit))).scalars())


async def sole_user(session: AsyncSession) -> User:
    """The instance's only user (for commands run without ``--user``): NotFound when there is
    none yet, InvalidInput naming how many when there are several."""
    users = list((await session.execute(select(User).order_by(User.id).limit(2))).scalars())
    if not users:
        raise NotFound("this Fable has no users yet: create one with `fable user create NAME`")
    if len(users) > 1:
        raise InvalidInput(f"this Fable has {await count_users(session)} users: pass --user NAME", field="user")
    return users[0]


async def only_user(session: AsyncSession, default_name: str) -> User:
    """The instance's only user, or a new first one named ``default_name`` (for a local ``fable
    mcp`` with no ``--user``); InvalidInput when there are several.

    Servers starting together on an empty database all try to create it; the losers get a
    Conflict from :func:`create_user` and act as the user the winner created."""
    users = list((await session.execute(select(User).order_by(User.id).limit(2))).scalars())
    if len(users) > 1:
        raise InvalidInput(f"this Fable has {await count_users(session)} users: pass --user NAME", field="user")
    if users:
        return users[0]
    try:
        return await create_user(session, default_name)
    except Conflict:
        return await find_user(session, default_name)


# --- administration -----------------------------------------------------------------------------


async def list_users(session: AsyncSession) -> list[User]:
    return list(await session.scalars(select(User).order_by(User.id)))


async def _account(session: AsyncSession, who: str | int, *, lock: bool = False) -> User:
    """An account by name or id (locked for the rest of the transaction with ``lock``)."""
    user = await find_user(session, who) if isinstance(who, str) else await get_user(session, who)
    if lock:
        await session.refresh(user, with_for_update=True)
    return user


async def set_active(session: AsyncSession, who: str | int, active: bool, *, by: int | None = None) -> User:
    """Disable or enable an account (by name or id). A disabled account cannot sign in, its
    sessions end and its API keys stop working; its data stays. The last active admin cannot be
    disabled, and an admin cannot disable themselves."""
    user = await _account(session, who, lock=True)
    if not active:
        if user.id == by:
            raise InvalidInput("you cannot disable your own account", field="is_active")
        await _refuse_last_admin(session, user, "disable")
        await login_sessions.end_all(session, user.id)
    await session.execute(update(User).where(User.id == user.id).values(is_active=active))
    await announce(session, f"user {user.id} {'enabled' if active else 'disabled'}")
    await session.refresh(user, ["is_active"])
    return user


async def set_role(session: AsyncSession, who: str | int, role: str) -> tuple[User, str]:
    """Make an account an ``admin`` or a ``user``; returns it and its role before. The last
    active admin stays one (an admin may step down only while another active admin remains)."""
    if role not in ROLES:
        raise InvalidInput(f"role must be 'user' or 'admin', not {role[:50]!r}", field="role")
    user = await _account(session, who, lock=True)
    before = user.role
    if before == "admin" and role != "admin":
        await _refuse_last_admin(session, user, "demote")
    await session.execute(update(User).where(User.id == user.id).values(role=role))
    await announce(session, f"user {user.id} role")
    await session.refresh(user, ["role"])
    return user, before


async def _refuse_last_admin(session: AsyncSession, user: User, doing: str) -> None:
    if user.role == "admin" and user.is_active:
        await session.execute(select(func.pg_advisory_xact_lock(_ADMINS_LOCK)))
        admins = (await session.execute(select(func.count(User.id)).where(
            User.role == "admin", User.is_active.is_(True)))).scalar_one()
        if admins <= 1:
            raise InvalidInput(f"{user.username!r} is the last active admin: make another admin before you "
                               f"{doing} it", field="role" if doing == "demote" else "username")


async def set_password(session: AsyncSession, username: str, new_password: Hashed | str) -> User:
    """An operator's password reset (no current password asked; hashed before the transaction):
    every session of the account ends and every reset link sent before stops working."""
    check_password(new_password)
    user = await find_user(session, username)
    await session.refresh(user, with_for_update=True)
    await _set_password(session, user, new_password, keep_session=None)
    return user


async def delete_user(session: AsyncSession, who: str | int, *, by: int | None = None) -> tuple[User, dict[str, int]]:
    """Delete an account with everything it owns (notes and tasks with their versions, links and
    work logs, projects, conversations, settings, API keys, sessions); returns the account and
    how many notes and projects went with it, and how many shares ended.

    Shares end with it, both ways: what it owned is gone, so the people it shared projects and
    notes with lose them (``shares_given``), and what others shared with it is no longer shared
    with anyone there (``shares_received``); other accounts' own notes and projects stay. The
    last active admin cannot be deleted, nor (``by``) an admin's own account from the admin page.
    """
    user = await _account(session, who, lock=True)
    if user.id == by:
        raise InvalidInput("you cannot delete your own account here", field="user_id")
    await _refuse_last_admin(session, user, "delete")
    owned = await count_owned(session, user)
    await session.execute(delete(User).where(User.id == user.id))
    await announce(session, f"user {user.id} deleted")
    return user, owned


async def count_owned(session: AsyncSession, user: User) -> dict[str, int]:
    """How many notes (tasks included) and projects an account owns, and how many shares it
    gave (of its own projects and notes) and received."""
    given = select(func.count(Share.id)).where(Share.owner_id == user.id)
    received = select(func.count(Share.id)).where(Share.grantee_user_id == user.id)
    return {
        "notes": await session.scalar(select(func.count(Note.id)).where(of_user(Note, user.id))) or 0,
        "projects": await session.scalar(select(func.count(Project.id)).where(of_user(Project, user.id))) or 0,
        "shares_given": await session.scalar(given) or 0,
        "shares_received": await session.scalar(received) or 0,
    }


# --- API keys -----------------------------------------------------------------------------------


def _key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


async def create_api_key(
    session: AsyncSession, user_id: int, name: str, scope: Scope = "write", toolsets: list[str] | None = None,
) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the full key, which is never retrievable again.
    ``toolsets``: what its MCP client is offered (checked by the caller); None, the server's default."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise InvalidInput("an API key needs a name of 1-100 characters", field="name")
    if scope not in ("read", "write"):
        raise InvalidInput(f"scope must be 'read' or 'write', not {scope!r}", field="scope")
    prefix = secrets.token_hex(4)
    key = f"fable_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiKey(user_id=user_id, name=name, prefix=prefix, key_hash=_key_hash(key), scope=scope, toolsets=toolsets)
    session.add(row)
    await session.flush()
    return row, key


async def caller_for_key(session: AsyncSession, key: str, surface: str) -> Caller:
    """Resolve a bearer key to its caller and stamp its last use; Unauthenticated if unknown."""
    row = (
        await session.execute(
            select(ApiKey, User)
            .join(User, User.id == ApiKey.user_id)
            .where(ApiKey.key_hash == _key_hash(key.strip()), User.is_active.is_(True))
        )
    ).first()
    if row is None:
        raise Unauthenticated("invalid or revoked API key")
    api_key, user = row
    now = datetime.now(UTC)
    if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > 60:
        await session.execute(update(ApiKey).where(ApiKey.id == api_key.id).values(last_used_at=now))
    return Caller(
        user_id=user.id,
        username=user.username,
        scope=api_key.scope,  # type: ignore[arg-type]
        surface=surface,  # type: ignore[arg-type]
        role=user.role,
        credential="key",
        toolsets=None if api_key.toolsets is None else tuple(api_key.toolsets),
    )


async def list_api_keys(session: AsyncSession, user_id: int) -> list[ApiKey]:
    rows = await session.scalars(
        select(ApiKey).where(of_user(ApiKey, user_id)).order_by(ApiKey.created_at.desc(), ApiKey.id.desc())
    )
    return list(rows)


async def revoke_api_key(session: AsyncSession, user_id: int, key_id: int) -> ApiKey:
    """Delete one of the user's keys; another user's key is NotFound."""
    row: ApiKey | None = await session.scalar(
        delete(ApiKey).where(ApiKey.id == key_id, of_user(ApiKey, user_id)).returning(ApiKey)
    )
    if row is None:
        raise NotFound(f"API key {key_id} not found", api_key_id=key_id)
    await announce(session, f"api key {row.id}")
    return row


async def list_every_api_key(session: AsyncSession) -> list[tuple[ApiKey, str]]:
    """Every key of every account with its owner's name, for operators (``fable apikey list``)."""
    rows = await session.execute(
        select(ApiKey, User.username).join(User, User.id == ApiKey.user_id).order_by(ApiKey.id))
    return [(key, username) for key, username in rows]


async def revoke_any_api_key(session: AsyncSession, key_id: int) -> tuple[ApiKey, str]:
    """Delete a key whoever owns it, for operators (``fable apikey revoke``); returns it and its
    owner's name."""
    row = (await session.execute(
        select(ApiKey, User.username).join(User, User.id == ApiKey.user_id).where(ApiKey.id == key_id))).first()
    if row is None:
        raise NotFound(f"API key {key_id} not found", api_key_id=key_id)
    key, username = row
    await session.execute(delete(ApiKey).where(ApiKey.id == key.id))
    await announce(session, f"api key {key.id}")
    return key, username
