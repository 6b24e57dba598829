"""``completion/complete`` for prompt and resource-template arguments.

Argument names decide what is offered: ``project`` → project names, ``tag`` → tags,
``note`` → note titles, ``date`` → today; template ``{id}`` → ids of recent notes or projects.
Anything else (including prompts Fable does not have) completes to nothing, as the spec allows.
"""

from __future__ import annotations

from datetime import date

import mcp_types as types

from fable_core.caller import Caller
from fable_core.runtime import Fable
from fable_mcp.lookups import MAX_VALUES, note_titles
from fable_mcp.prompts import PROMPTS
from fable_mcp.resources import NOTE_TEMPLATE, PROJECT_TEMPLATE, visible_projects

__all__ = ["complete"]


async def complete(fable: Fable, caller: Caller, params: types.CompleteRequestParams) -> types.CompleteResult:
    values = await _values(fable, caller, params.ref, params.argument.name, params.argument.value)
    return types.CompleteResult(completion=types.Completion(
        values=values[:MAX_VALUES], total=len(values), has_more=False))


async def _values(fable: Fable, caller: Caller, ref: object, argument: str, typed: str) -> list[str]:
    if isinstance(ref, types.PromptReference):
        if ref.name not in PROMPTS:
            return []
        return await _by_argument(fable, caller, argument, typed)
    if isinstance(ref, types.ResourceTemplateReference) and argument == "id":
        if ref.uri == NOTE_TEMPLATE:
            page = await fable.dispatcher.call("list_notes", {"limit": MAX_VALUES}, caller)
            return [str(n["id"]) for n in page["items"] if str(n["id"]).startswith(typed)]
        if ref.uri == PROJECT_TEMPLATE:
            return [str(p["id"]) for p in await visible_projects(fable, caller) if str(p["id"]).startswith(typed)]
    return []


async def _by_argument(fable: Fable, caller: Caller, argument: str, typed: str) -> list[str]:
    if argument == "project":
        titles = [p["title"] for p in await visible_projects(fable, caller)]
        wanted = typed.casefold()
        return sorted((t for t in titles if wanted in t.casefold()),
                      key=lambda t: (not t.casefold().startswith(wanted), t.casefold()))
    if argument == "note":
        return await note_titles(fable, caller, typed)
    if argument == "tag":
        page = await fable.dispatcher.call("list_tags", {"prefix": typed or None, "limit": MAX_VALUES}, caller)
        return [t["tag"] for t in page["items"]]
    if argument == "date":
        return [date.today().isoformat()]
    return []
