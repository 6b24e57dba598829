"""The profile as the assistant reads it: a compact block for the system prompt of every chat
and journal conversation (:func:`profile_prompt`), at most :data:`MAX_CHARS` characters: the
learned summary, the facts the user stated, and, while no summary is learned yet, the newest
:data:`RECENT` observations."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.people.profile.profile import load_profile
from fable_core.tools.caller import Caller

__all__ = ["MAX_CHARS", "RECENT", "profile_prompt"]

MAX_CHARS = 2000
RECENT = 10


async def profile_prompt(session: AsyncSession, caller: Caller) -> str | None:
    """The caller's profile for a system prompt, or None when it is empty (two small queries)."""
    profile = await load_profile(session, caller, observations=RECENT)
    parts = []
    if profile.summary:
        parts.append(profile.summary)
    if profile.facts:
        parts.append("They told you:\n" + "\n".join(f"- {fact}" for fact in profile.facts))
    if profile.observations and not profile.summary:
        parts.append("You noticed:\n" + "\n".join(f"- {o.text}" for o in profile.observations))
    if not parts:
        return None
    text = "\n\n".join(parts)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"
