"""GET /api/health (public): is the database reachable, and is an LLM configured and up.

Answers 200 when the database is up (the LLM is optional: every non-LLM capability works
without one) and 503 when it is not, so load balancers can route on the status alone.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fable_core.runtime import Fable
from fable_web.context import web

__all__ = ["routes"]

TIMEOUT = 3.0


async def database_status(fable: Fable) -> dict[str, Any]:
    try:
        async with asyncio.timeout(TIMEOUT):
            async with fable.db.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
    except (OSError, DBAPIError, TimeoutError) as e:
        return {"status": "unavailable", "error": str(e).splitlines()[0] if str(e) else type(e).__name__}
    return {"status": "ok"}


async def llm_status(fable: Fable) -> dict[str, Any]:
    """The provider setting, and what the LLM service (if one is installed) says of itself."""
    provider = fable.settings.llm_provider
    service = fable.services.get("llm")
    check = getattr(service, "health", None)
    if check is None or not inspect.iscoroutinefunction(check):
        return {"provider": provider, "status": "not configured"}
    try:
        async with asyncio.timeout(TIMEOUT):
            answer = await check()
    except Exception as e:  # noqa: BLE001 - a health probe reports any failure, never raises
        return {"provider": provider, "status": "unavailable", "error": str(e) or type(e).__name__}
    if hasattr(answer, "to_dict"):
        answer = answer.to_dict()
    if isinstance(answer, dict):
        return {"provider": provider, "status": "ok"} | answer
    if isinstance(answer, bool):
        return {"provider": provider, "status": "ok" if answer else "unavailable"}
    return {"provider": provider, "status": str(answer)}


async def health(request: Request) -> Response:
    fable = web(request).fable
    database, llm = await asyncio.gather(database_status(fable), llm_status(fable))
    up = database["status"] == "ok"
    return JSONResponse(
        {"status": "ok" if up else "unavailable", "database": database, "llm": llm},
        status_code=200 if up else 503,
    )


routes = [Route("/api/health", health, methods=["GET"])]
