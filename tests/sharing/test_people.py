"""Naming people to share with: whether a name is an account's cannot be hidden from someone who
shares with it, but it cannot be learned wholesale (security round 3: ``share(with_user=...)``
enumerated every username)."""

from __future__ import annotations

import pytest

from fable_core.errors import NotFound, RateLimited
from fable_core.infra.rate_limits import LIMITS
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def test_names_that_match_nobody_are_limited_per_user(fable: Fable, alice: Caller, bob: Caller) -> None:
    note = await fable.call("create_note", {"title": "Plans", "body": "ours"}, alice)
    assert (LIMITS["unknown_user"].attempts, LIMITS["unknown_user"].window_seconds) == (20, 3600)
    for i in range(20):
        with pytest.raises(NotFound, match="no user is called"):
            await fable.call("share", {"note_id": note["id"], "with_user": f"guess{i}"}, alice)
    with pytest.raises(RateLimited):  # a real name is refused too now: the answer tells nothing
        await fable.call("share", {"note_id": note["id"], "with_user": "bob"}, alice)
    other = await fable.call("create_note", {"title": "Bob's", "body": "his"}, bob)
    shared = await fable.call("share", {"note_id": other["id"], "with_user": "alice"}, bob)  # bob's own count
    assert shared["permission"] == "viewer"
