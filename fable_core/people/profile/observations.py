"""``record_observation``: one thing the assistant noticed about the user (or the user told it),
kept in their profile until the summary learns it (:mod:`fable_core.assistant.profile_learning`)."""

from __future__ import annotations

from sqlalchemy import delete, func, select

from fable_core.db.models import ProfileObservation
from fable_core.people.profile.profile import MAX_OBSERVATIONS, ObservationText, ObservationView, upsert_profile
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by


@tool(group="profile", title="Record an observation", scope="write", route=Route("POST", "/profile/observations", 201))
async def record_observation(ctx: Context, text: ObservationText) -> ObservationView:
    """Remember something you learned about the user (a preference, habit, circumstance) for
    later conversations."""
    session = ctx.session
    row = ProfileObservation(user_id=ctx.user_id, text=text)
    session.add(row)
    await session.flush()
    await session.refresh(row)
    keep = select(ProfileObservation.id).where(owned_by(ProfileObservation, ctx.caller)).order_by(
        ProfileObservation.id.desc()).limit(MAX_OBSERVATIONS)
    await session.execute(delete(ProfileObservation).where(
        owned_by(ProfileObservation, ctx.caller), ProfileObservation.id.not_in(keep.scalar_subquery())))
    await upsert_profile(session, ctx.caller, {"changed_at": func.now()})
    return ObservationView.model_validate(row)
