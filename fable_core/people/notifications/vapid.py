"""The instance's VAPID key pair (RFC 8292): how push services know our messages are ours.

Generated once, on first need, and stored in ``instance_settings`` (key ``vapid``): the public
key in clear (browsers subscribe with it as ``applicationServerKey``), the private key encrypted
with a key derived from the instance secret (``FABLE_SECRET_KEY``, else the generated
``FABLE_DATA_DIR/secret_key``) by HKDF-SHA256, as a Fernet token (AES-128-CBC + HMAC-SHA256).
A copy of the database alone (a backup, a dump) cannot sign pushes.

Replicas racing to create the pair store one (``ON CONFLICT DO NOTHING``, then read). When the
secret changed and the stored private key no longer decrypts, a new pair replaces it and every
push subscription is deleted: they were made for the old public key, and push services refuse
messages signed with another. Browsers subscribe again when the UI next opens (it compares the
key its subscription was made with).
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.db.models import InstanceSetting, PushSubscription

__all__ = ["VapidKeys", "b64url", "b64url_decode", "vapid_keys"]

_KEY = "vapid"
_INFO = b"fable vapid private key v1"
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class VapidKeys:
    public: str  # the uncompressed P-256 point, base64url without padding
    private: ec.EllipticCurvePrivateKey


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    """Base64url with or without padding (browsers send it without); ValueError if it is not."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


async def vapid_keys(db: Database, settings: Settings) -> VapidKeys:
    """The instance's pair, created on first need (in a transaction of its own)."""
    fernet = _fernet(settings)
    async with db.transaction() as session:
        stored = await session.scalar(select(InstanceSetting.value).where(InstanceSetting.key == _KEY))
        if stored is None:
            await session.execute(pg_insert(InstanceSetting).values(key=_KEY, value=_new_pair(fernet))
                                  .on_conflict_do_nothing(index_elements=[InstanceSetting.key]))
            stored = await session.scalar(select(InstanceSetting.value).where(InstanceSetting.key == _KEY))
        try:
            return _load(stored, fernet)
        except (InvalidToken, KeyError, TypeError, ValueError):
            return await _replace(session, stored, fernet)


async def _replace(session: AsyncSession, stored: Any, fernet: Fernet) -> VapidKeys:
    _log.warning("the stored VAPID key does not decrypt with this secret key (was FABLE_SECRET_KEY "
                 "changed?): a new pair replaces it and every push subscription is dropped")
    fresh: Any = _new_pair(fernet)
    changed = await session.scalar(update(InstanceSetting).where(
        InstanceSetting.key == _KEY, InstanceSetting.value == stored).values(value=fresh)
        .returning(InstanceSetting.key))
    if changed is None:  # another process replaced it first: use theirs
        fresh = await session.scalar(select(InstanceSetting.value).where(InstanceSetting.key == _KEY))
    else:
        await session.execute(delete(PushSubscription))
    return _load(fresh, fernet)


def _fernet(settings: Settings) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(settings.secret_key().encode())
    return Fernet(base64.urlsafe_b64encode(key))


def _new_pair(fernet: Fernet) -> dict[str, str]:
    private = ec.generate_private_key(ec.SECP256R1())
    raw = private.private_numbers().private_value.to_bytes(32, "big")
    return {"public": b64url(_public_bytes(private)), "private": fernet.encrypt(raw).decode()}


def _load(stored: Any, fernet: Fernet) -> VapidKeys:
    raw = fernet.decrypt(stored["private"].encode())
    private = ec.derive_private_key(int.from_bytes(raw, "big"), ec.SECP256R1())
    public = b64url(_public_bytes(private))
    if public != stored["public"]:
        raise ValueError("the stored public key is not the private key's")
    return VapidKeys(public=public, private=private)


def _public_bytes(private: ec.EllipticCurvePrivateKey) -> bytes:
    return private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
