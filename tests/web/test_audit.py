"""Every admin action leaves an audit row (who, what, to what), never a secret; admins read
them newest first, a page at a time."""

from __future__ import annotations

import httpx
from sqlalchemy import text
from support.smtp import smtp_server
from support.web import error_of

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

SECRET = "the smtp login's own secret"


async def test_each_admin_action_is_audited_without_secrets(
    as_alice: httpx.AsyncClient, fable: Fable, alice: Caller, bob: Caller,
) -> None:
    async with smtp_server() as (_, port):
        steps = [
            ("PATCH", f"/api/admin/users/{bob.user_id}", {"role": "admin"}),
            ("PATCH", f"/api/admin/users/{bob.user_id}", {"role": "user", "is_active": False}),
            ("PATCH", f"/api/admin/users/{bob.user_id}", {"is_active": True}),
            ("PUT", "/api/admin/registration", {"mode": "invite"}),
            ("PATCH", "/api/admin/settings", {"public_url": "https://fable.example.org"}),
            ("POST", "/api/admin/invitations", {"email": "dora@example.com", "expires_in_hours": 2}),
            ("PUT", "/api/admin/mail", {"host": "127.0.0.1", "port": port, "tls": "none", "username": "fable",
                                        "password": SECRET, "sender": "fable@example.com"}),
            ("POST", "/api/admin/mail/test", {"to": "ops@example.com"}),
            ("DELETE", "/api/admin/mail", None),
            ("DELETE", f"/api/admin/users/{bob.user_id}", None),
        ]
        answers = [await as_alice.request(method, path, json=body) for method, path, body in steps]
    assert [r.status_code for r in answers] == [200, 200, 200, 200, 200, 201, 200, 503, 200, 200], \
        [r.text for r in answers]  # the test mail fails: this server offers no login
    token = answers[5].json()["token"]
    invitation = answers[5].json()["id"]
    assert (await as_alice.delete(f"/api/admin/invitations/{invitation}")).status_code == 200
    assert (await as_alice.put("/api/admin/registration", json={"mode": "invite"})).status_code == 200  # no change
    assert (await as_alice.patch(f"/api/admin/users/{alice.user_id}", json={"is_active": False})).status_code == 422

    page = (await as_alice.get("/api/admin/audit", params={"limit": 50})).json()
    rows = list(reversed(page["items"]))
    assert page["next_cursor"] is None
    assert rows.pop(0)["action"] == "auth.sign_in"  # alice's, which made this session
    assert [r["action"] for r in rows] == [
        "user.role", "user.disable", "user.role", "user.enable", "instance.registration", "instance.public_url",
        "invitation.create", "instance.mail", "mail.test", "instance.mail", "user.delete", "invitation.revoke"]
    assert {(r["actor"], r["actor_id"], r["surface"]) for r in rows} == {("alice", alice.user_id, "web")}
    bob_target = {"kind": "user", "id": bob.user_id, "name": "bob"}
    assert rows[0]["target"] == bob_target and rows[0]["details"] == {"role": {"from": "user", "to": "admin"}}
    assert rows[4]["details"] == {"registration": {"from": "open", "to": "invite"}}
    assert rows[6]["target"] == {"kind": "invitation", "id": invitation, "name": "dora@example.com"}
    assert rows[7]["details"]["changed"]["password"] == "set"
    assert rows[8]["details"]["sent"] is False and "could not send mail" in rows[8]["details"]["error"]
    assert rows[10]["details"] == {"notes": 0, "projects": 0, "shares_given": 0, "shares_received": 0}

    async with fable.db.reading() as s:
        everything = await s.scalar(text("SELECT string_agg(row_to_json(app_logs)::text, ' ') FROM app_logs"))
    assert SECRET not in everything and token not in everything


async def test_the_log_pages_newest_first(as_alice: httpx.AsyncClient) -> None:
    for mode in ("invite", "closed", "open", "invite", "open"):
        await as_alice.put("/api/admin/registration", json={"mode": mode})
    seen: list[str] = []
    cursor = None
    while True:
        page = (await as_alice.get("/api/admin/audit", params={"limit": 2} | ({"cursor": cursor} if cursor else {}))
                ).json()
        seen += [r["details"]["registration"]["to"] if r["action"] != "auth.sign_in" else "signed in"
                 for r in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ["open", "invite", "open", "closed", "invite", "signed in"]
    for bad in ({"limit": 0}, {"limit": 201}, {"cursor": "nonsense"}, {"page": 2}):
        r = await as_alice.get("/api/admin/audit", params=bad)
        assert r.status_code == 422, (bad, r.text)
        assert error_of(r)["type"] == "invalid_input"
