"""OAuth clients: dynamic registration (RFC 7591) and redirect URI rules.

Every client is public (it proves itself with PKCE, never a secret): a registration asking for
another ``token_endpoint_auth_method`` is answered with ``none``, as RFC 7591 lets a server
replace a requested value. The metadata is checked by Authlib's
:class:`~authlib.oauth2.rfc7591.ClientMetadataClaims`, then by Fable's rules for redirect URIs:

- ``https`` on any host; ``http`` only on a loopback host (RFC 8252 §7.3: the port may then
  differ at authorization time, since a native app listens on whatever port it gets);
- a private-use scheme (``com.example.app:/callback``, RFC 8252 §7.1) for native apps;
- never ``javascript:``, ``data:``, ``file:`` and the like, never a fragment, at most 10.

At authorization, a redirect URI must be one registered, character for character (except the
loopback port).
"""

from __future__ import annotations

import re
import secrets
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc7591 import ClientMetadataClaims
from joserfc.errors import JoseError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.admin.audit import Actor, Target, audit
from fable_core.db.database import Database
from fable_core.db.models import OAuthClient
from fable_core.errors import InvalidInput

__all__ = ["LOOPBACK", "check_metadata", "get_client", "redirect_allowed", "register_client", "registration_view"]

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
MAX_REDIRECT_URIS = 10
_REFUSED_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "about", "blob", "ftp", "ws", "wss",
                              "intent", "mailto", "tel", "sms", "chrome", "view-source"})
GRANT_TYPES = ("authorization_code", "refresh_token")


def _bad_metadata(message: str, error: str = "invalid_client_metadata") -> InvalidInput:
    return InvalidInput(message, field="redirect_uris" if error == "invalid_redirect_uri" else "metadata",
                        oauth_error=error)


# What a browser reads otherwise than Python's urlsplit (WHATWG URL parsing: a backslash is a
# slash, controls and spaces are stripped): "http://evil.example\@127.0.0.1:9/cb" is 127.0.0.1 to
# urlsplit and evil.example to a browser. Such a URI is refused outright, registered or asked for.
_AMBIGUOUS = re.compile(r"[\x00-\x20\x7f\\]")


def unambiguous(uri: str) -> bool:
    """Whether ``uri`` means the same host to a browser as to us: no backslash, control
    character or space anywhere, and no user info, percent-encoding or second ``@`` in its host."""
    if _AMBIGUOUS.search(uri):
        return False
    try:
        parts = urlsplit(uri)
    except ValueError:
        return False
    return "@" not in parts.netloc and "%" not in parts.netloc


def check_redirect_uri(uri: Any) -> str:
    """``uri`` if Fable accepts it as a redirect URI; InvalidInput (``invalid_redirect_uri``) else."""
    if not isinstance(uri, str) or not uri or len(uri) > 2000:
        raise _bad_metadata("each redirect URI must be a string of at most 2000 characters", "invalid_redirect_uri")
    if not unambiguous(uri):
        raise _bad_metadata(f"redirect URI {uri[:200]!r} has a backslash, a space, a control character or user "
                            "info, which browsers and servers read differently", "invalid_redirect_uri")
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError as e:
        raise _bad_metadata(f"redirect URI {uri[:200]!r} is not a URL", "invalid_redirect_uri") from e
    scheme = parts.scheme.lower()
    if parts.fragment or "#" in uri:
        raise _bad_metadata(f"redirect URI {uri[:200]!r} must not have a fragment", "invalid_redirect_uri")
    if scheme == "https" and host:
        return uri
    if scheme == "http" and host in LOOPBACK:
        return uri
    if scheme == "http":
        raise _bad_metadata(f"redirect URI {uri[:200]!r}: plain http is allowed only on a loopback address "
                            "(127.0.0.1, [::1], localhost)", "invalid_redirect_uri")
    if scheme and scheme not in _REFUSED_SCHEMES:
        return uri  # a native app's private-use scheme (RFC 8252 §7.1): com.example.app:/cb, cursor://...
    raise _bad_metadata(f"redirect URI {uri[:200]!r} must be https, http on a loopback address, or a "
                        "native app's private-use scheme (com.example.app:/cb)", "invalid_redirect_uri")


def check_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The client columns from registration metadata; InvalidInput for what Fable refuses."""
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise _bad_metadata("redirect_uris must be a non-empty list", "invalid_redirect_uri")
    if len(uris) > MAX_REDIRECT_URIS:
        raise _bad_metadata(f"at most {MAX_REDIRECT_URIS} redirect URIs", "invalid_redirect_uri")
    uris = [check_redirect_uri(u) for u in uris]
    # Authlib checks the other registered fields; redirect URIs are checked above, by rules
    # stricter than its (which also refuse a native app's private-use scheme)
    claims = ClientMetadataClaims({k: v for k, v in metadata.items() if k != "redirect_uris"}, {})
    try:
        claims.validate()
    except (JoseError, ValueError, TypeError, AttributeError) as e:
        raise _bad_metadata(f"client metadata refused: {e}") from e
    grant_types = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grant_types, list) or not set(grant_types) <= set(GRANT_TYPES):
        raise _bad_metadata(f"grant_types must be among {', '.join(GRANT_TYPES)}")
    if metadata.get("response_types", ["code"]) != ["code"]:
        raise _bad_metadata("response_types must be ['code']")
    name = metadata.get("client_name")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 200):
        raise _bad_metadata("client_name must be a string of 1 to 200 characters")
    client_uri = metadata.get("client_uri")
    if client_uri is not None and (not isinstance(client_uri, str) or len(client_uri) > 2000
                                   or urlsplit(client_uri).scheme not in ("https", "http")):
        raise _bad_metadata("client_uri must be an http(s) URL of at most 2000 characters")
    return {"redirect_uris": uris, "client_name": (name or "").strip() or _host_name(uris[0]),
            "client_uri": client_uri, "software": _software(metadata)}


def _host_name(uri: str) -> str:
    return (urlsplit(uri).hostname or urlsplit(uri).scheme or "unnamed client")[:200]


def _software(metadata: dict[str, Any]) -> str | None:
    parts = [str(metadata[k])[:90] for k in ("software_id", "software_version") if isinstance(metadata.get(k), str)]
    return " ".join(parts) or None


async def register_client(session: AsyncSession, metadata: dict[str, Any], ip: str | None) -> OAuthClient:
    """Store (and audit) a new public client from its registration metadata; InvalidInput (with
    the RFC 7591 error code in ``details['oauth_error']``) for metadata Fable does not accept."""
    checked = check_metadata(metadata)
    row = OAuthClient(client_id=f"fc_{secrets.token_urlsafe(24)}", registered_ip=(ip or "")[:64] or None, **checked)
    session.add(row)
    await session.flush()
    await session.refresh(row, ["created_at"])
    await audit(session, registrant(ip), "oauth.client.register", Target("oauth_client", row.id, row.client_name[:100]),
                client_id=row.client_id)
    return row


def registrant(ip: str | None) -> Actor:
    """Who registers a client: nobody signed in, known by address."""
    return Actor(None, f"ip:{ip}"[:64], "rest")


async def refuse_registration(db: Database, ip: str | None, reason: str) -> None:
    """Audit a registration refused before it was read (too many from one address)."""
    async with db.transaction() as session:
        await audit(session, registrant(ip), "oauth.client.register_refused", reason=reason)


def registration_view(row: OAuthClient) -> dict[str, Any]:
    """The RFC 7591 registration response."""
    view: dict[str, Any] = {
        "client_id": row.client_id,
        "client_id_issued_at": int(row.created_at.timestamp()),
        "client_name": row.client_name,
        "redirect_uris": list(row.redirect_uris),
        "grant_types": list(GRANT_TYPES),
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "scope": "read write",
    }
    if row.client_uri:
        view["client_uri"] = row.client_uri
    return view


async def get_client(session: AsyncSession, client_id: str | None) -> OAuthClient | None:
    """The enabled client ``client_id``, or None (unknown, disabled or malformed)."""
    if not client_id or len(client_id) > 2000:
        return None
    row: OAuthClient | None = await session.scalar(select(OAuthClient).where(OAuthClient.client_id == client_id))
    return row if row is not None and row.disabled_at is None else None


def redirect_allowed(client: OAuthClient, uri: str | None) -> bool:
    """Whether ``uri`` is one of the client's redirect URIs: exactly, or (RFC 8252 §7.3) a
    registered loopback http URI on another port."""
    if not uri or not unambiguous(uri):
        return False
    if uri in client.redirect_uris:
        return True
    try:
        asked = urlsplit(uri)
        asked_port = asked.port
    except ValueError:
        return False
    if asked.scheme != "http" or asked.hostname not in LOOPBACK or asked_port is None:
        return False
    for registered in client.redirect_uris:
        known = urlsplit(registered)
        if (known.scheme, known.hostname, known.path, known.query) == ("http", asked.hostname, asked.path,
                                                                       asked.query):
            return True
    return False
