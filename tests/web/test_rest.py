"""REST generated from the registry: routes, argument shaping, typed errors, nothing written on bad input."""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy import select
from starlette.applications import Starlette
from support.web import BASE, error_of, make_client

from fable_core.capabilities import load_capabilities
from fable_core.db.models import AppLog
from fable_core.runtime import Fable
from fable_core.tools import REGISTRY

load_capabilities()
ROUTED = [t for t in REGISTRY if t.route is not None]


async def test_every_routed_tool_reaches_the_dispatcher(as_alice: httpx.AsyncClient, fable: Fable) -> None:
    """Each tool's route runs that tool (its usage row names it), whatever the outcome."""
    assert len(ROUTED) >= 20
    for t in ROUTED:
        assert t.route is not None
        path = re.sub(r"{\w+}", "999999", t.route.path)
        r = await as_alice.request(t.route.method, f"/api{path}", json=None)
        assert r.status_code in (200, 201, 202, 404, 409, 422, 503), (t.name, r.status_code, r.text)
        if r.status_code >= 400:
            assert error_of(r)["type"] in ("not_found", "invalid_input", "conflict", "unavailable")
            assert "no such endpoint" not in r.text
    await fable.dispatcher.usage.flush()
    async with fable.db.transaction() as session:
        actions = set(await session.scalars(select(AppLog.action)))
    assert {t.name for t in ROUTED} <= actions


async def test_notes_crud_over_rest(as_alice: httpx.AsyncClient) -> None:
    r = await as_alice.post("/api/notes", json={"title": "Plan", "body": "See [[Other]]", "tags": ["Work"]})
    assert r.status_code == 200, r.text
    note = r.json()
    assert note["tags"] == ["work"] and note["kind"] == "note"
    r = await as_alice.patch(f"/api/notes/{note['id']}", json={"body": "changed"})
    assert r.status_code == 200 and r.json()["version"] == 2
    r = await as_alice.get(f"/api/notes/{note['id']}")
    assert r.json()["body"] == "changed"
    r = await as_alice.get(f"/api/notes/{note['id']}/versions")
    assert [(v["version"], v["changes"]) for v in r.json()["items"]] == [(2, "body +1/-1 lines"), (1, "created")]
    r = await as_alice.delete(f"/api/notes/{note['id']}")
    assert r.status_code == 200
    assert error_of(await as_alice.get(f"/api/notes/{note['id']}"))["type"] == "not_found"


async def test_query_strings_are_shaped_by_the_schema(as_alice: httpx.AsyncClient) -> None:
    for title, status in (("a", "todo"), ("b", "done"), ("c", "in_progress")):
        await as_alice.post("/api/notes", json={"title": title, "status": status})
    await as_alice.post("/api/notes", json={"title": "plain"})

    async def titles(query: str) -> list[str]:
        r = await as_alice.get(f"/api/notes?{query}")
        assert r.status_code == 200, r.text
        return sorted(i["title"] for i in r.json()["items"])

    assert await titles("status=todo&status=done") == ["a", "b"]   # repeated
    assert await titles("status=todo,in_progress") == ["a", "c"]   # comma list
    assert await titles("kind=note") == ["plain"]
    first = (await as_alice.get("/api/notes?limit=2&sort=title")).json()   # integer from text
    assert [i["title"] for i in first["items"]] == ["a", "b"] and first["next_cursor"]
    rest = await titles(f"limit=2&sort=title&cursor={first['next_cursor']}")
    assert rest == ["c", "plain"]


async def test_invalid_query_values_are_422_naming_the_field(as_alice: httpx.AsyncClient) -> None:
    r = await as_alice.get("/api/notes?limit=lots")
    err = error_of(r)
    assert r.status_code == 422 and err["type"] == "invalid_input"
    assert [e["field"] for e in err["details"]["errors"]] == ["limit"]
    r = await as_alice.get("/api/notes?colour=blue")
    assert r.status_code == 422 and error_of(r)["details"]["errors"][0]["field"] == "colour"
    r = await as_alice.get("/api/notes/abc")
    assert r.status_code == 422 and error_of(r)["details"]["errors"][0]["field"] == "note_id"


async def test_a_literal_path_is_not_taken_for_an_id(as_alice: httpx.AsyncClient, row_counts) -> None:
    """``/notes/import`` is import_notes' path: PATCH there is 405, never update_note("import")."""
    before = await row_counts()
    r = await as_alice.patch("/api/notes/import", json={"title": "x"})
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert await row_counts() == before


async def test_unknown_tool_and_argument_names_are_answered_with_the_close_ones(
    as_alice: httpx.AsyncClient, row_counts
) -> None:
    before = await row_counts()
    r = await as_alice.post("/api/tools/serch_notes", json={"query": "x"})
    assert r.status_code == 404 and error_of(r)["details"] == {"name": "serch_notes", "did_you_mean": ["search_notes"]}
    r = await as_alice.get("/api/notes?limt=5")
    err = error_of(r)
    assert r.status_code == 422 and err["details"]["errors"][0]["did_you_mean"] == ["limit"]
    assert "did you mean `limit`?" in err["message"]
    r = await as_alice.post("/api/notes", json={"title": "Plan", "tag": ["work"]})
    assert r.status_code == 422 and error_of(r)["details"]["errors"][0]["did_you_mean"] == ["tags"]
    assert await row_counts() == before


async def test_recurrence_in_words_over_rest(as_alice: httpx.AsyncClient, row_counts) -> None:
    r = await as_alice.post("/api/notes", json={"title": "Review", "due_date": "2026-12-07",
                                                "recurrence_rule": "every 2 weeks"})
    assert r.status_code == 200 and r.json()["recurrence_rule"] == "FREQ=WEEKLY;INTERVAL=2"
    before = await row_counts()
    r = await as_alice.post("/api/notes", json={"title": "Pay", "due_date": "2026-12-07",
                                                "recurrence_rule": "biweekly"})
    err = error_of(r)
    assert r.status_code == 422 and err["details"]["errors"][0]["field"] == "recurrence_rule"
    assert "'biweekly' is ambiguous: every two weeks is 'every 2 weeks' (FREQ=WEEKLY;INTERVAL=2)" in err["message"]
    assert await row_counts() == before


async def test_work_report_over_rest(as_alice: httpx.AsyncClient) -> None:
    task = (await as_alice.post("/api/notes", json={"title": "Invoice", "status": "todo"})).json()
    await as_alice.post(f"/api/tasks/{task['id']}/logs", json={"minutes": 30, "work_date": "2026-11-04"})
    r = await as_alice.get("/api/reports/work?start=2026-11-02&end=2026-11-08&top=1")
    assert r.status_code == 200, r.text
    assert r.json()["total_minutes"] == 30 and r.json()["days"] == [{"day": "2026-11-04", "minutes": 30}]
    r = await as_alice.get("/api/reports/work?start=yesterday")
    assert r.status_code == 422 and error_of(r)["details"]["errors"][0]["field"] == "start"


async def test_any_tool_by_name(as_alice: httpx.AsyncClient) -> None:
    r = await as_alice.post("/api/tools/create_note", json={"title": "By name"})
    assert r.status_code == 200 and r.json()["title"] == "By name"
    r = await as_alice.post("/api/tools/no_such_tool", json={})
    assert r.status_code == 404 and error_of(r)["type"] == "unknown_tool"
    r = await as_alice.get("/api/tools")
    names = {t["name"] for t in r.json()["items"]}
    assert names == {t.name for t in REGISTRY}


async def test_path_and_body_must_agree(as_alice: httpx.AsyncClient, row_counts) -> None:
    note = (await as_alice.post("/api/notes", json={"title": "One"})).json()
    before = await row_counts()
    r = await as_alice.patch(f"/api/notes/{note['id']}", json={"note_id": note["id"] + 1, "title": "x"})
    assert r.status_code == 422 and error_of(r)["details"]["field"] == "note_id"
    assert await row_counts() == before


async def test_another_users_ids_are_404_and_untouched(
    as_alice: httpx.AsyncClient, as_bob: httpx.AsyncClient, row_counts
) -> None:
    note = (await as_alice.post("/api/notes", json={"title": "Alice's", "body": "secret"})).json()
    before = await row_counts()
    for method, path, body in [
        ("GET", f"/api/notes/{note['id']}", None),
        ("PATCH", f"/api/notes/{note['id']}", {"body": "mine now"}),
        ("DELETE", f"/api/notes/{note['id']}", None),
        ("POST", f"/api/notes/{note['id']}/convert", {"to": "task"}),
        ("GET", f"/api/notes/{note['id']}/versions", None),
    ]:
        r = await as_bob.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
        assert error_of(r)["type"] == "not_found" and "secret" not in r.text
    assert await row_counts() == before
    assert (await as_alice.get(f"/api/notes/{note['id']}")).json()["body"] == "secret"


@pytest.mark.parametrize(
    ("content", "headers", "status", "error_type"),
    [
        (b'{"title": "x",', {"content-type": "application/json"}, 400, "malformed_json"),
        (b"\xff\xfe", {"content-type": "application/json"}, 400, "malformed_json"),
        (b"title=x", {"content-type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"),
        (b'{"title": "x"}', {"content-type": "text/plain"}, 415, "unsupported_media_type"),
        (b'["x"]', {"content-type": "application/json"}, 422, "invalid_input"),
        (b'{"title": "x", "colour": "red"}', {"content-type": "application/json"}, 422, "invalid_input"),
        (b'{"title": ""}', {"content-type": "application/json"}, 422, "invalid_input"),
        (b'{"title": "x", "status": "someday"}', {"content-type": "application/json"}, 422, "invalid_input"),
        (b'{}', {"content-type": "application/json"}, 422, "invalid_input"),
    ],
)
async def test_bad_bodies_are_refused_and_write_nothing(
    as_alice: httpx.AsyncClient, row_counts, content: bytes, headers: dict[str, str], status: int,
    error_type: str,
) -> None:
    before = await row_counts()
    r = await as_alice.post("/api/notes", content=content, headers=headers)
    assert r.status_code == status, r.text
    assert error_of(r)["type"] == error_type
    assert await row_counts() == before


async def test_oversized_bodies_are_413_and_write_nothing(
    as_alice: httpx.AsyncClient, fable: Fable, row_counts
) -> None:
    limit = fable.settings.fable_max_body_bytes
    before = await row_counts()
    big = b'{"title": "big", "body": "' + b"x" * limit + b'"}'
    r = await as_alice.post("/api/notes", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and error_of(r)["type"] == "payload_too_large"

    async def chunks():  # no Content-Length: counted while reading
        yield big[: limit // 2]
        yield big[limit // 2:]

    r = await as_alice.post("/api/notes", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and error_of(r)["type"] == "payload_too_large"
    assert await row_counts() == before


async def test_unknown_api_paths_are_json_404_and_others_serve_the_ui(app: Starlette) -> None:
    async with make_client(app) as c:
        r = await c.get("/api/no/such/thing")
        assert r.status_code == 404 and error_of(r)["type"] == "not_found"
        r = await c.get("/api")
        assert r.status_code == 404 and r.headers["content-type"] == "application/json"
        r = await c.put("/api/notes")
        assert r.status_code == 405 and error_of(r)["type"] == "method_not_allowed"
        assert r.headers["allow"] == "GET, HEAD, POST"
        ui = await c.get("/projects/12")
        index = await c.get("/")
        assert ui.status_code == index.status_code == 200
        assert ui.text == index.text and ui.headers["content-type"].startswith("text/html")


async def test_unauthenticated_requests_get_401(app: Starlette) -> None:
    async with make_client(app, origin=BASE) as c:
        for method, path in [("GET", "/api/notes"), ("POST", "/api/notes"), ("GET", "/api/tools"),
                             ("POST", "/api/tools/list_notes"), ("GET", "/api/api-keys")]:
            r = await c.request(method, path, json={"title": "x"} if method == "POST" else None)
            assert r.status_code == 401 and error_of(r)["type"] == "unauthenticated", (method, path)
            assert r.headers["www-authenticate"].startswith("Bearer")



async def test_a_client_that_hangs_up_mid_body_is_not_an_error(
    app: Starlette, fable: Fable, alice, row_counts
) -> None:
    """A disconnect while the body is read ends the request quietly: no 500, nothing written."""
    from fable_core.identity.accounts import create_api_key

    async with fable.db.transaction() as session:
        _, key = await create_api_key(session, alice.user_id, "hangs up")
    messages = [{"type": "http.request", "body": b'{"title": ', "more_body": True},
                {"type": "http.disconnect"}]
    sent: list[dict] = []

    async def receive() -> dict:
        return messages.pop(0)

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/api/notes", "raw_path": b"/api/notes", "query_string": b"",
        "root_path": "", "server": ("localhost", 80), "client": ("203.0.113.7", 1),
        "headers": [(b"host", b"localhost"), (b"content-type", b"application/json"),
                    (b"authorization", f"Bearer {key}".encode())],
    }
    before = await row_counts()
    await app(scope, receive, send)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 400
    assert await row_counts() == before
