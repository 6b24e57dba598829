"""Client ID Metadata Documents: a client whose ``client_id`` is an ``https`` URL, where its
metadata lives (the MCP authorization spec, 2025-11-25). No registration: at each authorization
request Fable fetches the document through the SSRF guard (:func:`fable_core.infra.ssrf.fetch`: never
a private address, 16 KB, 5 s), checks that it names itself (``client_id`` equal to the URL) and
its metadata by the registration rules (:mod:`fable_core.identity.oauth.clients`), and keeps it as a
client row under that id, updated from the latest document. The token endpoint then knows it.

The fetch happens before any database transaction (a slow site holds no connection). A document
that cannot be fetched or is not acceptable is an InvalidInput: shown on Fable's consent page,
never redirected to. ``http`` is allowed only to a host the operator exempts
(``FABLE_FETCH_ALLOW_HOSTS``), for tests and closed networks.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select

from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.db.models import OAuthClient
from fable_core.errors import FableError, InvalidInput
from fable_core.identity.oauth.clients import check_metadata
from fable_core.infra.ssrf import fetch

__all__ = ["MAX_BYTES", "is_document_id", "resolve"]

MAX_BYTES = 16_384
TIMEOUT = 5.0
MAX_ID = 2000


def is_document_id(client_id: str | None) -> bool:
    """Whether ``client_id`` is a URL naming a metadata document (rather than a registered id)."""
    return bool(client_id) and str(client_id).startswith(("https://", "http://"))


def _checked_url(client_id: str, settings: Settings) -> str:
    try:
        parts = urlsplit(client_id)
        netloc = parts.netloc
    except ValueError as e:
        raise _refused(client_id, "it is not a URL") from e
    exempt = netloc in settings.fable_fetch_allow_hosts
    if len(client_id) > MAX_ID or parts.fragment or parts.username or parts.password or \
            parts.path in ("", "/") or not (parts.scheme == "https" or exempt):
        raise _refused(client_id, "a client metadata document's URL must be https, with a path, no fragment")
    return client_id


def _refused(client_id: str, why: str) -> InvalidInput:
    return InvalidInput(f"client_id {client_id[:200]!r} refused: {why}", field="client_id",
                        oauth_error="invalid_client")


async def resolve(db: Database, settings: Settings, client_id: str | None) -> None:
    """For a document URL, fetch and check the document and store (or update) its client;
    nothing for a registered id."""
    if client_id is None or not is_document_id(client_id):
        return
    url = _checked_url(client_id, settings)
    try:
        fetched = await fetch(url, allow=settings.fable_fetch_allow_hosts, max_bytes=MAX_BYTES, timeout=TIMEOUT,
                              headers={"accept": "application/json"})
    except FableError as e:
        raise _refused(client_id, f"its metadata document could not be fetched: {e.message}") from e
    if fetched.status != 200 or fetched.truncated:
        raise _refused(client_id, f"its metadata document answered {fetched.status}"
                                  + (" and is larger than 16 KB" if fetched.truncated else ""))
    try:
        document: Any = json.loads(fetched.content)
    except (ValueError, UnicodeDecodeError) as e:
        raise _refused(client_id, "its metadata document is not JSON") from e
    if not isinstance(document, dict) or document.get("client_id") != client_id:
        raise _refused(client_id, "its metadata document does not name it as client_id")
    checked = check_metadata({k: v for k, v in document.items() if k != "client_id"})
    async with db.transaction() as session:
        row = await session.scalar(select(OAuthClient).where(OAuthClient.client_id == client_id).with_for_update())
        if row is None:
            session.add(OAuthClient(client_id=client_id, **checked))
        else:
            row.client_name, row.redirect_uris = checked["client_name"], checked["redirect_uris"]
            row.client_uri, row.software = checked["client_uri"], checked["software"]
