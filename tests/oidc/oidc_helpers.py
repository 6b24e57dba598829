"""Helpers the OIDC tests share (imported by name; ``conftest`` holds only fixtures)."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette

from fable_core.runtime import Fable
from fable_web.app import create_app

BASE = "http://localhost"


def oidc_app(fable: Fable, issuer: str, **settings: Any) -> Starlette:
    return create_app(Fable(fable.settings.model_copy(update={
        "oidc_issuer": issuer, "oidc_client_id": "fable-test", "oidc_client_secret": "s3cret",
        "oidc_name": "Testcloak", "fable_base_url": BASE, **settings}), fable.db))
