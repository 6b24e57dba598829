"""Learning each user's profile summary: the ``learn_profiles`` job, every :data:`EVERY` seconds.

A profile whose facts or observations changed since its summary was written (by the model or
by the user) is summarised again by the assistant's model provider (through the user's share of
it, ``fable_core.assistant.gate``), one user after another, at most :data:`PER_RUN` a run; the
model is asked outside any transaction and its answer stored only if the profile did not change
meanwhile (else the next run tries again). With no model configured, or while it does not answer
(``fable.availability``), nothing is learned and nothing fails; a model that fails or answers
nothing usable leaves the summary as it was, to be tried next run.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import func, or_, select, update

from fable_core.assistant.gate import background, model_for
from fable_core.assistant.parts import LLM
from fable_core.db.database import rowcount
from fable_core.db.models import Profile
from fable_core.errors import FableError
from fable_core.people.profile.profile import load_profile
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["EVERY", "PER_RUN", "learn_profiles", "learn_summaries"]

EVERY = 3600
PER_RUN = 20
TIMEOUT = 120.0  # seconds one summary may take
MAX_SUMMARY = 1200
_OBSERVATIONS = 60
_log = logging.getLogger(__name__)
_PROMPT = ("You keep a short profile of a person for an assistant that helps them. From the facts "
           "they stated and what was noticed about them, write at most 120 words in the third "
           "person: who they are, what matters to them, their preferences and habits. Facts win "
           "over observations. Write only the profile.")


@job(every=EVERY)
async def learn_profiles(fable: Runtime) -> None:
    """Summarise the profiles that changed since their summary (when a model is configured)."""
    await learn_summaries(fable)


async def learn_summaries(fable: Runtime) -> int:
    """Learn the summaries that are due; how many were stored."""
    if fable.part(LLM) is None or "llm" not in fable.availability:  # none configured, or not answering now
        return 0
    async with fable.db.reading() as session:
        due = (await session.execute(select(Profile.user_id, Profile.changed_at).where(
            or_(Profile.summary_at.is_(None), Profile.summary_at < Profile.changed_at))
            .order_by(Profile.changed_at).limit(PER_RUN))).all()
    stored = 0
    for user_id, changed_at in due:
        stored += await _learn(fable, Caller(user_id=user_id, surface="internal"), changed_at)
    return stored


async def _learn(fable: Runtime, caller: Caller, changed_at: datetime) -> int:
    async with fable.db.reading() as session:
        profile = await load_profile(session, caller, observations=_OBSERVATIONS)
    if not profile.facts and not profile.observations:
        return 0
    facts = "\n".join(f"- {f}" for f in profile.facts) or "(none)"
    noticed = "\n".join(f"- {o.text}" for o in reversed(profile.observations)) or "(none)"
    try:
        async with asyncio.timeout(TIMEOUT):
            with background():
                answer = await model_for(fable, caller).complete([
                {"role": "system", "content": _PROMPT},
                    {"role": "user", "content": f"Facts they stated:\n{facts}\n\nNoticed:\n{noticed}"}],
                    max_tokens=300)
    except (FableError, TimeoutError) as e:
        _log.info("profile of user %s not learned: %s", caller.user_id, getattr(e, "message", e))
        return 0
    summary = answer.strip()[:MAX_SUMMARY]
    if not summary:
        return 0
    async with fable.db.transaction() as session:
        result = await session.execute(update(Profile).where(
            owned_by(Profile, caller), Profile.changed_at == changed_at)
            .values(summary=summary, summary_at=func.now()))
    return rowcount(result)
