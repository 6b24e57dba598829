"""GET /api/health: database and LLM status, public."""

from __future__ import annotations

from support.fake_llm import FakeLLM, ollama_app
from support.servers import serve_in_thread
from support.web import make_client

from fable_core.runtime import Fable
from fable_web.app import create_app


async def test_health_without_an_llm(client) -> None:
    r = await client.get("/api/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["database"] == {"status": "ok", "vectors": {"on": True}}
    assert body["llm"]["provider"] == "none" and body["llm"]["status"] in ("disabled", "not configured")


async def test_health_reports_a_reachable_and_an_unreachable_ollama(fable: Fable) -> None:
    with serve_in_thread(ollama_app(FakeLLM())) as url:
        settings = fable.settings.model_copy(update={"llm_provider": "ollama", "ollama_url": url})
        up = await Fable.open(settings)
        try:
            async with make_client(create_app(up)) as c:
                llm = (await c.get("/api/health")).json()["llm"]
        finally:
            await up.close()
    assert llm["provider"] == "ollama" and llm["status"] == "ok"
    settings = fable.settings.model_copy(update={"llm_provider": "ollama", "ollama_url": "http://127.0.0.1:9"})
    down = await Fable.open(settings)
    try:
        async with make_client(create_app(down)) as c:
            r = await c.get("/api/health")
    finally:
        await down.close()
    assert r.status_code == 200 and r.json()["llm"]["status"] != "ok"
    assert r.json()["database"]["status"] == "ok"


async def test_health_is_503_when_the_database_is_down(fable: Fable) -> None:
    settings = fable.settings.model_copy(update={"database_url": "postgresql://nobody@127.0.0.1:9/none"})
    from sqlalchemy.ext.asyncio import create_async_engine

    from fable_core.db.database import Database, async_url

    url = async_url(settings.database_url or "")
    broken = Fable(settings, Database(create_async_engine(url), url))
    try:
        async with make_client(create_app(broken)) as c:
            r = await c.get("/api/health")
    finally:
        await broken.close()
    assert r.status_code == 503
    assert r.json()["status"] == "unavailable" and r.json()["database"]["status"] == "unavailable"
