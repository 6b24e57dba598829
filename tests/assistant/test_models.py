"""Model management (admins only) against the fake Ollama: list, pull (also streamed as
NDJSON over HTTP), delete, warm up; everyone else is refused."""

from __future__ import annotations

import json

import httpx
import pytest
from support.fake_llm import FakeLLM

from fable_core.errors import Forbidden
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


async def test_admins_list_pull_delete_and_warm(ai_fable: Fable, fake: FakeLLM, as_admin: Caller) -> None:
    listed = await ai_fable.call("list_models", {}, as_admin)
    assert (listed["provider"], listed["chat_model"]) == ("ollama", "qwen3:8b")
    assert [m["name"] for m in listed["items"]] == ["qwen3:8b", "nomic-embed-text", "fake-embed"]
    pulled = await ai_fable.call("pull_model", {"name": "llama3.2:1b"}, as_admin)
    assert pulled["status"] == "success" and "llama3.2:1b" in fake.models
    await ai_fable.call("delete_model", {"name": "llama3.2:1b"}, as_admin)
    assert "llama3.2:1b" not in fake.models
    warmed = await ai_fable.call("warm_model", {}, as_admin)
    assert warmed == {"name": "qwen3:8b", "status": "loaded", "progress": []}
    assert ("generate", {"model": "qwen3:8b", "prompt": "", "stream": False, "keep_alive": "30m"}) in [
        (k, {key: b.get(key) for key in ("model", "prompt", "stream", "keep_alive")}) for k, b in fake.requests]


async def test_everyone_else_is_forbidden(ai_fable: Fable, fake: FakeLLM, alice: Caller, bob: Caller) -> None:
    for name, args in (("list_models", {}), ("pull_model", {"name": "x"}), ("delete_model", {"name": "qwen3:8b"}),
                       ("warm_model", {})):
        with pytest.raises(Forbidden):
            await ai_fable.call(name, args, bob)
    assert fake.models == ["qwen3:8b", "nomic-embed-text", "fake-embed"]


async def test_bad_model_names_are_refused(ai_fable: Fable, as_admin: Caller) -> None:
    from fable_core.errors import InvalidInput

    with pytest.raises(InvalidInput):
        await ai_fable.call("pull_model", {"name": "../../etc; rm -rf"}, as_admin)


async def test_a_pull_streams_its_progress(ai_fable: Fable, fake: FakeLLM, alice: Caller, bob: Caller) -> None:
    async with ai_fable.db.transaction() as s:
        _, admin_key = await create_api_key(s, alice.user_id, "t")
        _, user_key = await create_api_key(s, bob.user_id, "t")
    transport = httpx.ASGITransport(create_app(ai_fable))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        response = await http.post("/api/models/pull/stream", json={"name": "phi4"},
                                   headers={"Authorization": f"Bearer {admin_key}"})
        events = [block.split("\n") for block in response.text.strip().split("\n\n")]
        kinds = [lines[0].removeprefix("event: ") for lines in events]
        lines = [json.loads(lines[1].removeprefix("data: ")) for lines in events]
        assert kinds == ["pull"] * 4 + ["result"]
        assert lines[0] == {"status": "pulling manifest"} and lines[3] == {"status": "success"}
        assert {"status": "downloading", "digest": "sha256:1", "total": 100, "completed": 50} in lines
        assert lines[-1]["status"] == "success" and lines[-1]["name"] == "phi4"
        refused = await http.post("/api/models/pull/stream", json={"name": "phi4"},
                                  headers={"Authorization": f"Bearer {user_key}"})
        assert refused.status_code == 403
