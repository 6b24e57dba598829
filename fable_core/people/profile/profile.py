"""The profile as tools: read it, change it (the user), record an observation (the assistant).

Everything here is the caller's own. Facts are an ordered list the user replaces whole (at most
:data:`MAX_FACTS`); observations are kept newest :data:`MAX_OBSERVATIONS` (older ones are
dropped as new ones come); the summary is the model's
(:mod:`fable_core.assistant.profile_learning`) until the user edits it, and learned again once
facts or observations change after that.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Profile, ProfileObservation
from fable_core.errors import InvalidInput
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.results import absent_when_none

__all__ = ["MAX_FACTS", "MAX_OBSERVATIONS", "ObservationText", "ObservationView", "ProfileView", "load_profile",
           "upsert_profile"]

MAX_FACTS = 50
MAX_OBSERVATIONS = 200
MAX_SUMMARY = 4000
Fact = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
ObservationText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=500)]


class ObservationView(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    text: str
    created_at: datetime


class ProfileView(BaseModel):
    facts: list[str] = Field(default_factory=list, description="What you stated about yourself.")
    summary: str = Field("", exclude_if=lambda v: not v, description="Learned from facts and observations.")
    summary_at: datetime | None = absent_when_none()
    observations: list[ObservationView] = Field(default_factory=list, exclude_if=lambda v: not v,
                                                description="What the assistant noticed, newest first.")


@tool(group="profile", title="Get the profile", scope="read", route=Route("GET", "/profile"))
async def get_profile(ctx: Context) -> ProfileView:
    """Your profile: facts you stated, the assistant's observations, the learned summary."""
    return await load_profile(ctx.session, ctx.caller)


@tool(group="profile", title="Change the profile", scope="write", destructive=True, idempotent=True,
      route=Route("PATCH", "/profile"))
async def update_profile(
    ctx: Context, facts: Annotated[list[Fact], Field(max_length=MAX_FACTS)] | None = None,
    summary: Annotated[str, StringConstraints(strip_whitespace=True, max_length=MAX_SUMMARY)] | None = None,
    forget: Annotated[list[Annotated[int, Field(ge=1, le=2**31 - 1)]], Field(max_length=MAX_OBSERVATIONS)]
    | None = None,
) -> ProfileView:
    """Change your profile: facts (the whole list), summary, observation ids to forget."""
    if facts is None and summary is None and forget is None:
        raise InvalidInput("nothing to change: give facts, summary or forget")
    session = ctx.session
    if forget:
        await session.execute(delete(ProfileObservation).where(
            owned_by(ProfileObservation, ctx.caller), ProfileObservation.id.in_(forget)))
    values: dict[str, object] = {}
    if facts is not None:
        values["facts"] = list(dict.fromkeys(facts))
    if facts is not None or forget:
        values["changed_at"] = func.now()
    if summary is not None:
        values |= {"summary": summary, "summary_at": func.now()}
    await upsert_profile(session, ctx.caller, values)
    return await load_profile(session, ctx.caller)


async def upsert_profile(session: AsyncSession, caller: Caller, values: dict[str, object]) -> None:
    if not values:
        return
    stmt = insert(Profile).values(user_id=caller.user_id, **values)
    await session.execute(stmt.on_conflict_do_update(index_elements=[Profile.user_id], set_=values))


async def load_profile(session: AsyncSession, caller: Caller, *, observations: int = MAX_OBSERVATIONS) -> ProfileView:
    """The caller's profile with their newest ``observations``."""
    profile = await session.scalar(select(Profile).where(owned_by(Profile, caller)))
    noticed = (await session.execute(select(ProfileObservation).where(owned_by(ProfileObservation, caller))
                                     .order_by(ProfileObservation.id.desc()).limit(observations))).scalars()
    view = ProfileView(observations=[ObservationView.model_validate(o) for o in noticed])
    if profile is not None:
        view.facts, view.summary, view.summary_at = list(profile.facts), profile.summary, profile.summary_at
    return view
