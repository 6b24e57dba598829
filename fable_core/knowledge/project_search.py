"""Finding a project by words: its title as a tool would resolve it, its description and its
automatic summary (kept by the assistant, :mod:`fable_core.assistant.project_summaries`)."""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from fable_core.db.models import Project
from fable_core.knowledge.matching import name_tier
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import reach_of, visible

__all__ = ["ProjectMatch", "ProjectMatches"]


class ProjectMatch(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    title: str
    description: str
    auto_summary: str | None = None
    score: float


class ProjectMatches(BaseModel):
    query: str
    items: list[ProjectMatch]


@tool(group="projects", title="Find projects", scope="read", route=Route("GET", "/search/projects"))
async def search_projects(
    ctx: Context,
    query: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)],
    limit: Annotated[int, Field(ge=1, le=20)] = 5,
) -> ProjectMatches:
    """The caller's projects matching words in title, description or automatic summary, best first."""
    wanted = query.casefold()
    projects = (await ctx.session.execute(visible(Project, await reach_of(ctx.session, ctx.caller)))).scalars()
    scored = []
    for p in projects:
        tier = name_tier(query, p.title)  # the title: named as a tool would resolve it
        contents = [_score(wanted, f.casefold()) for f in (p.description or "", p.auto_summary or "")]
        score = max([_TIER_SCORE[tier] if tier else 0.0, *contents])
        if score >= 0.3:
            scored.append(ProjectMatch(id=p.id, title=p.title, description=p.description,
                                       auto_summary=p.auto_summary, score=round(score, 3)))
    scored.sort(key=lambda m: (-m.score, m.id))
    return ProjectMatches(query=query, items=scored[:limit])


_TIER_SCORE = {1: 1.0, 2: 0.9, 3: 0.8, 4: 0.6}


def _score(wanted: str, field: str) -> float:
    """How well words match a description or summary."""
    if not field:
        return 0.0
    if wanted in field:
        return 1.0 if wanted == field else 0.9
    words = wanted.split()
    hits = sum(1 for w in words if w in field) / len(words) if words else 0.0
    ratio = SequenceMatcher(None, wanted, field[: len(wanted) * 3]).ratio()
    return max(ratio if ratio >= 0.6 else 0.0, 0.8 * hits)

