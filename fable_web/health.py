"""GET /api/health (public): is the database reachable (and may it hold vectors: the vector
extension's self-test, :mod:`fable_core.db.vectors`), and is an LLM configured and up (and, with
``DATABASE_READ_URL``, the read replica: informative, it never makes the answer 503); and the
event loop's worst lag of the last minute (:mod:`fable_core.infra.loopwatch`).

The LLM's status is the background probe's (see :func:`llm_status`). Answers 200 when the
database is up (the LLM is optional: every non-LLM capability works
without one) and 503 when it is not, so load balancers can route on the status alone. A
database that answers but cannot write (a write failed in the last minute for the server's sake:
a full disk, a read-only server) is ``degraded``, still 200: reads work everywhere, and another
replica could not write either.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from fable_core.assistant.providers.base import NO_MODEL
from fable_core.assistant.status import NO_EMBEDDER
from fable_core.errors import FableError
from fable_core.runtime import Fable
from fable_web.context import web
from fable_web.routing import ApiRoute, Doc

__all__ = ["routes"]

TIMEOUT = 3.0


async def database_status(fable: Fable) -> dict[str, Any]:
    try:
        async with asyncio.timeout(TIMEOUT):
            await fable.db.ping()
    except FableError as e:
        return {"status": "unavailable", "error": e.message.splitlines()[0]}
    except TimeoutError:
        return {"status": "unavailable", "error": f"no answer within {TIMEOUT:g} s"}
    if (why := fable.db.writes_failing()) is not None:
        return {"status": "degraded", "error": f"writes fail: {why}", "vectors": fable.db.vectors.to_dict()}
    return {"status": "ok", "vectors": fable.db.vectors.to_dict()}


async def llm_status(fable: Fable) -> dict[str, Any]:
    """The provider setting, and the model server's last known health: probed in the background
    and at most every few seconds here (:mod:`fable_core.assistant.status`), never once per page
    load, and never while an answer streams."""
    provider = fable.settings.llm_provider
    if fable.assistant is None:
        return {"provider": provider, "status": "not configured",
                "fix": NO_MODEL,
                "semantic_search": {"on": False, "reason": NO_EMBEDDER}}
    answer = await fable.assistant.status.current()
    return {"provider": provider, "status": "ok"} | answer.to_dict()


async def replica_status(fable: Fable) -> dict[str, Any] | None:
    """The read replica's (``DATABASE_READ_URL``), when there is one: informative only, as reads
    go to the primary whenever it is down or behind."""
    if fable.db.replica is None:
        return None
    try:
        async with asyncio.timeout(TIMEOUT):
            return await fable.db.replica.status()
    except TimeoutError:
        return {"status": "unavailable", "error": f"no answer within {TIMEOUT:g} s"}


class Health(BaseModel):
    """How this Fable is: 200 when its database answers, else 503 with the same document."""

    status: Literal["ok", "degraded", "unavailable"] = Field(
        description="degraded: the database answers but writes fail (a full disk, a read-only server): "
        "reads work, nothing new is saved; database.error says why.")
    database: dict[str, Any] = Field(description="status, and the vector extension's verdict or the error.")
    llm: dict[str, Any] = Field(description="The provider, the model server's last known health, semantic search.")
    event_loop: dict[str, Any] = Field(description="worst_lag_ms: the loop's worst lateness lately.")
    load: dict[str, int] = Field(description="Requests in_progress now, the limit past which they are refused "
                                 "(503, Retry-After: FABLE_MAX_REQUESTS), and how many were refused since start.")
    read_replica: dict[str, Any] | None = Field(None, exclude_if=lambda v: v is None,
                                                description="When DATABASE_READ_URL is set.")


async def health(request: Request) -> Response:
    fable = web(request).fable
    database, llm, replica = await asyncio.gather(database_status(fable), llm_status(fable), replica_status(fable))
    up = database["status"] != "unavailable"
    body = {"status": database["status"], "database": database, "llm": llm,
            "event_loop": {"worst_lag_ms": round(fable.loop_watch.worst() * 1000)},
            "load": request.app.state.load.to_dict()}
    if replica is not None:
        body["read_replica"] = replica
    return JSONResponse(body, status_code=200 if up else 503)


routes = [ApiRoute("/api/health", health, methods=["GET"], doc=Doc("Database and LLM status", "system", public=True,
                                                                            result=Health))]
