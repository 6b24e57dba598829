"""Web Push subscriptions as tools: the instance's public key, subscribe and unsubscribe a device.

A browser subscribes with the public key (``pushManager.subscribe({applicationServerKey})``)
and hands over what its push service gave it: the endpoint URL and the keys its messages are
encrypted to (RFC 8291: ``p256dh``, a P-256 public key, and ``auth``, a 16-byte secret). Every
field is checked before anything is stored: the endpoint is an https URL (or an http one on a
host ``FABLE_PUSH_ALLOW_HOSTS`` lets through) whose literal address, if it has one, is public,
and whose name is checked again by the SSRF guard at every send; the keys decode to a point on
the curve and a 16-byte secret. Subscribing an endpoint again updates it (a device's keys
change, or another account signs in on that browser): one row per endpoint, never two.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric import ec
from pydantic import AfterValidator, BaseModel, Field, StringConstraints
from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from fable_core.db.database import rowcount
from fable_core.db.models import PushSubscription
from fable_core.errors import Conflict, InvalidInput
from fable_core.infra import ssrf
from fable_core.people.notifications.vapid import b64url_decode, vapid_keys
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by

__all__ = ["MAX_DEVICES", "PublicKey", "Subscribed", "Unsubscribed", "check_endpoint"]

MAX_DEVICES = 20
MAX_ENDPOINT = 2000


class PublicKey(BaseModel):
    public_key: str = Field(description="The VAPID public key (base64url): applicationServerKey.")


class Subscribed(BaseModel):
    devices: int = Field(description="Devices of yours now subscribed.")


class Unsubscribed(BaseModel):
    unsubscribed: bool = Field(description="Whether that endpoint was subscribed for you.")


def _p256dh(value: str) -> str:
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url_decode(value))
    except ValueError as e:
        raise ValueError("p256dh must be a P-256 public key, uncompressed, in base64url (65 bytes)") from e
    return value


def _auth(value: str) -> str:
    try:
        if len(b64url_decode(value)) == 16:
            return value
    except ValueError:
        pass
    raise ValueError("auth must be the 16-byte authentication secret in base64url")


Endpoint = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_ENDPOINT)]
P256dh = Annotated[str, StringConstraints(strip_whitespace=True, max_length=200), AfterValidator(_p256dh)]
AuthSecret = Annotated[str, StringConstraints(strip_whitespace=True, max_length=100), AfterValidator(_auth)]


def check_endpoint(endpoint: str, allow: list[str]) -> None:
    """InvalidInput unless ``endpoint`` may be pushed to (module docstring)."""
    parts = urlsplit(endpoint)
    try:
        host = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    except ValueError as e:
        raise InvalidInput(f"endpoint {endpoint[:100]!r} is not a URL", field="endpoint") from e
    if parts.scheme != "https" and not (parts.scheme == "http" and host in allow):
        raise InvalidInput(f"endpoint must be an https URL, not {endpoint[:100]!r}", field="endpoint")
    try:
        ssrf.check_url(endpoint, allow, "FABLE_PUSH_ALLOW_HOSTS")
    except ssrf.Blocked as e:
        raise InvalidInput(f"endpoint {endpoint[:100]!r} cannot be pushed to: {e.message}", field="endpoint") from e


@tool(group="notifications", title="Get the Web Push public key", scope="read", transaction="phases", agents=False,
      route=Route("GET", "/push/public-key"))
async def get_push_public_key(ctx: Context) -> PublicKey:
    """The Web Push applicationServerKey."""
    return PublicKey(public_key=(await vapid_keys(ctx.fable.db, ctx.settings)).public)


@tool(group="notifications", title="Subscribe a device to push", scope="write", idempotent=True, agents=False,
      route=Route("POST", "/push/subscriptions"))
async def subscribe_push(
    ctx: Context, endpoint: Endpoint, p256dh: P256dh, auth: AuthSecret,
    device: Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)] = "",
) -> Subscribed:
    """Push your notifications to a browser's subscription (endpoint and keys).

    Args:
        device: Its name.
    """
    check_endpoint(endpoint, ctx.settings.fable_push_allow_hosts)
    mine = owned_by(PushSubscription, ctx.caller)
    known = await ctx.session.scalar(select(PushSubscription.id).where(mine, PushSubscription.endpoint == endpoint))
    devices = await ctx.session.scalar(select(func.count()).where(mine)) or 0
    if known is None and devices >= MAX_DEVICES:
        raise Conflict(f"at most {MAX_DEVICES} devices can be subscribed; unsubscribe one first", limit=MAX_DEVICES)
    values = {"user_id": ctx.user_id, "p256dh": p256dh, "auth": auth, "user_agent": device, "failures": 0}
    await ctx.session.execute(pg_insert(PushSubscription).values(endpoint=endpoint, **values)
                              .on_conflict_do_update(index_elements=[PushSubscription.endpoint], set_=values))
    return Subscribed(devices=devices + (known is None))


@tool(group="notifications", title="Unsubscribe a device from push", scope="write", idempotent=True, agents=False,
      route=Route("DELETE", "/push/subscriptions"))
async def unsubscribe_push(ctx: Context, endpoint: Endpoint) -> Unsubscribed:
    """Stop pushing to a browser's endpoint."""
    result = await ctx.session.execute(delete(PushSubscription).where(
        owned_by(PushSubscription, ctx.caller), PushSubscription.endpoint == endpoint))
    return Unsubscribed(unsubscribed=rowcount(result) > 0)
