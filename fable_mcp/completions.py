"""``completion/complete`` for prompt and resource-template arguments.

Argument names decide what is offered: ``project`` → project names, ``tag`` → tags,
``note`` → note titles, ``date`` → today; template ``{id}`` → ids of notes or projects that
start with the typed digits. Anything else (including prompts Fable does not have) completes
to nothing, as the spec allows, and so does text nothing can match, however long.

Each lookup searches the database and returns one value more than an answer holds
(:data:`~fable_core.knowledge.lookups.FETCH_VALUES`), which is how an answer knows it has more.
"""

from __future__ import annotations

import mcp_types as types

from fable_core.knowledge.lookups import (
    MAX_VALUES,
    Section,
    ids_starting,
    note_titles,
    project_titles,
    tag_names,
)
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.clock import today_for
from fable_mcp.prompts import PROMPTS
from fable_mcp.resources import NOTE_TEMPLATE, PROJECT_TEMPLATE

__all__ = ["complete"]

_TEMPLATE_SECTIONS: dict[str, Section] = {NOTE_TEMPLATE: "notes", PROJECT_TEMPLATE: "projects"}


async def complete(fable: Fable, caller: Caller, params: types.CompleteRequestParams) -> types.CompleteResult:
    """At most :data:`MAX_VALUES` values; ``hasMore`` when the lookup found more, and ``total``
    only when the answer holds them all (counting the rest would cost a query per keystroke)."""
    values = await _values(fable, caller, params.ref, params.argument.name, params.argument.value)
    more = len(values) > MAX_VALUES
    return types.CompleteResult(completion=types.Completion(
        values=values[:MAX_VALUES], total=None if more else len(values), has_more=more))


async def _values(fable: Fable, caller: Caller, ref: object, argument: str, typed: str) -> list[str]:
    if isinstance(ref, types.PromptReference):
        if ref.name not in PROMPTS:
            return []
        return await _by_argument(fable, caller, argument, typed)
    if isinstance(ref, types.ResourceTemplateReference) and argument == "id" and ref.uri in _TEMPLATE_SECTIONS:
        return await ids_starting(fable, caller, _TEMPLATE_SECTIONS[ref.uri], typed)
    return []


async def _by_argument(fable: Fable, caller: Caller, argument: str, typed: str) -> list[str]:
    if argument == "project":
        return await project_titles(fable, caller, typed)
    if argument == "note":
        return await note_titles(fable, caller, typed)
    if argument == "tag":
        return await tag_names(fable, caller, typed)
    if argument == "date":
        return [(await today_for(fable.db, caller)).isoformat()]
    return []
