"""Secrets Fable must use again but nobody may read back: sealed with the instance's secret key.

The SMTP password an admin enters is needed to log in to the mail server, so it cannot be
hashed; it is stored sealed (Fernet: AES-128-CBC with an HMAC-SHA256, keyed from the secret
key through HKDF with a purpose of its own), and no API ever returns it. A database dump alone
does not reveal it; the secret key (``FABLE_SECRET_KEY`` or the data directory's
``secret_key``) does. When the secret key changes, sealed values become unreadable
(:class:`Unreadable`) and must be entered again.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["Unreadable", "seal", "unseal"]


class Unreadable(ValueError):
    """A sealed value that does not open with this secret key (changed, or not ours)."""


def _fernet(secret: str, purpose: str) -> Fernet:
    key = HKDF(algorithm=SHA256(), length=32, salt=None, info=f"fable sealed: {purpose}".encode()).derive(
        secret.encode())
    return Fernet(base64.urlsafe_b64encode(key))


def seal(plain: str, secret: str, purpose: str) -> str:
    return _fernet(secret, purpose).encrypt(plain.encode()).decode()


def unseal(sealed: str, secret: str, purpose: str) -> str:
    try:
        return _fernet(secret, purpose).decrypt(sealed.encode()).decode()
    except (InvalidToken, ValueError) as e:
        raise Unreadable(f"a sealed {purpose} does not open with this secret key") from e
