"""What an admin's API key (or OAuth token) can do beyond a user's is exactly what
``docs/security.md`` lists, and what runs the instance is refused to every credential but a
person signed in (or the operator's command line): on every surface, by the registry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fable_core.errors import Forbidden
from fable_core.runtime import Fable
from fable_core.tools import REGISTRY
from fable_core.tools.caller import Caller

DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"
SESSION_ONLY = {"backup_instance", "list_logs", "list_oauth_clients", "disable_oauth_client",
                # one's own credentials: a key never changes the password or the address, nor mints keys
                "change_password", "change_email", "send_email_verification", "list_sessions", "end_session",
                "create_api_key", "revoke_api_key", "set_api_key_toolsets", "set_connection_toolsets",
                # accounts and the instance
                "list_users", "update_user", "delete_user", "list_invitations", "create_invitation",
                "revoke_invitation", "list_audit", "get_instance_settings", "update_instance_settings",
                "get_registration", "set_registration", "get_mail_server", "set_mail_server", "remove_mail_server",
                "send_test_mail", "tool_usage"}


def documented() -> set[str]:
    table = DOCS.read_text().split("<!-- admin-key-tools -->")[1].split("<!-- /admin-key-tools -->")[0]
    return set(re.findall(r"^\s*\| `(\w+)` \|", table, re.MULTILINE))


def test_an_admin_key_reaches_exactly_the_documented_admin_tools() -> None:
    admin_key = Caller(user_id=1, role="admin", scope="write", surface="rest", credential="key")
    user_key = Caller(user_id=2, role="user", scope="write", surface="rest", credential="key")
    extra = {t.name for t in REGISTRY.for_caller(admin_key)} - {t.name for t in REGISTRY.for_caller(user_key)}
    assert extra == documented()
    assert {t.name for t in REGISTRY if t.credentials == "session"} == SESSION_ONLY


@pytest.mark.parametrize("caller", [
    Caller(user_id=1, role="admin", surface="rest", credential="key"),
    Caller(user_id=1, role="admin", surface="mcp", credential="oauth"),
    Caller(user_id=1, role="admin", surface="assistant", credential="session"),
], ids=["key", "oauth", "assistant"])
async def test_what_runs_the_instance_is_refused_to_keys_tokens_and_the_assistant(fable: Fable, alice: Caller,
                                                                                   caller: Caller) -> None:
    assert alice.is_admin
    caller = Caller(user_id=alice.user_id, role="admin", surface=caller.surface, credential=caller.credential)
    assert not SESSION_ONLY & {t.name for t in REGISTRY.for_caller(caller)}  # not offered
    for name in SESSION_ONLY:
        with pytest.raises(Forbidden) as refused:
            await fable.call(name, {"client_id": "fc_x"} if name == "disable_oauth_client" else {}, caller)
        assert refused.value.details["reason"] == "session_only"
    signed_in = Caller(user_id=alice.user_id, role="admin", surface="web", credential="session")
    assert {t.name for t in REGISTRY.for_caller(signed_in)} >= SESSION_ONLY
