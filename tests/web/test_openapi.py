"""The OpenAPI document: valid 3.1, generated from the registry's schemas."""

from __future__ import annotations

import asyncio
import re

import httpx
from openapi_spec_validator import validate
from starlette.applications import Starlette
from starlette.routing import Route

from fable_core.tools import REGISTRY


async def test_every_api_route_of_the_app_is_in_the_document(client: httpx.AsyncClient, app: Starlette) -> None:
    """Walk the app's routes: every /api route and method is an operation (only the catch-all
    that answers unknown paths with a JSON 404 is not one)."""
    doc = (await client.get("/api/openapi.json")).json()
    served = {(method.lower(), re.sub(r"{(\w+):\w+}", r"{\1}", route.path))
              for route in app.routes if isinstance(route, Route) and route.path.startswith("/api")
              and route.name != "api_not_found" for method in (route.methods or set()) - {"HEAD"}}
    documented = {(method, path) for path, ops in doc["paths"].items() for method in ops}
    assert served - documented == set()
    assert documented - served == set()
    assert len(served) > 80


async def test_openapi_validates_and_covers_every_route(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/api/openapi.json")).json()
    await asyncio.to_thread(validate, doc)  # the validator's work is the test's: off the loop it checks
    assert doc["openapi"] == "3.1.0"
    for t in REGISTRY:
        if t.route is None:
            continue
        op = doc["paths"][f"/api{t.route.path}"][t.route.method.lower()]
        assert op["operationId"] == t.name and op["description"] == t.description
        if t.signature.blob:  # its bytes, in their own content type (the ones a download declares)
            content = op["responses"][str(t.route.status)]["content"]
            assert set(content) == set(t.signature.media_types or ["*/*"])
            assert all(c["schema"] == {"type": "string", "format": "binary"}
                       for m, c in content.items() if not m.endswith("json"))
            continue
        response = op["responses"][str(t.route.status)]["content"]["application/json"]["schema"]
        assert set(response.get("properties", {})) == set(t.output_schema.get("properties", {}))
        if t.stream:
            streamed = doc["paths"][f"/api{t.route.path}/stream"][t.route.method.lower()]
            assert "text/event-stream" in streamed["responses"]["200"]["content"]
    assert doc["paths"]["/api/tools/{name}"]["post"]["parameters"][0]["schema"]["enum"] == [
        t.name for t in REGISTRY]
    for path in ("/api/auth/login", "/api/api-keys", "/api/health"):
        assert path in doc["paths"]


async def test_parameters_come_from_the_tool_schema(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/api/openapi.json")).json()
    list_notes = REGISTRY.get("list_notes")
    assert list_notes is not None
    params = {p["name"]: p for p in doc["paths"]["/api/notes"]["get"]["parameters"]}
    assert set(params) == set(list_notes.input_schema["properties"])
    assert all(p["in"] == "query" for p in params.values())
    create = doc["paths"]["/api/notes"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert create["required"] == ["title"] and create["additionalProperties"] is False
    read = {p["name"]: p for p in doc["paths"]["/api/notes/{note_id}"]["get"]["parameters"]}
    assert read["note_id"]["in"] == "path" and read["note_id"]["required"] is True
