"""A report as notes, all in ONE transaction with the run's row: an index note (the summary,
[[links]] to the section notes, the sources) and one note per section (its parent the index,
its sources listed); or, when the outline failed, the one synthesised note. Either every note
of a run is written or none is: no orphan section notes.

Notes go through the knowledge tools (``ctx.call``: ``create_note``, ``update_note``,
``delete_note``), so they obey every rule a direct call does. A title another note already has
(or nearly) gets the question, then a number, added.

**Reruns.** A run of a question whose normalised form (:func:`question_key`) a finished run of
the same user had updates that run's notes instead of adding new ones: the index note, and each
section note whose section title (normalised) is in the new outline, get the new text as a new
version (their titles stay); sections new to the outline get new notes; section notes whose
section is no longer in the outline are deleted. A note the user deleted meanwhile is written
anew.
"""

from __future__ import annotations

import contextlib
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.assistant.answers import cut
from fable_core.db.models import Note, ResearchRun, title_key
from fable_core.errors import Conflict, NotFound
from fable_core.outside.research.pipeline import Report, Source
from fable_core.tools import Context
from fable_core.tools.access import owned_by

__all__ = ["question_key", "write_report"]

_TAGS = ["research"]


def question_key(question: str) -> str:
    """The question as reruns compare it: case, punctuation and spacing ignored."""
    return title_key(question)[:1000]


async def write_report(ctx: Context, session: AsyncSession, run: ResearchRun, report: Report) -> list[dict[str, Any]]:
    """Write the report's notes (in ``ctx``'s open transaction) and record them on ``run``;
    the notes, index first, as ``{note_id, title, role, section?}``."""
    before = await _previous_notes(session, ctx, run)
    alive = await _titles(session, ctx, [n["note_id"] for n in before])  # of the notes still there
    old_index = next((n["note_id"] for n in before if n["role"] == "index" and n["note_id"] in alive), None)
    old_sections = {title_key(n.get("section", "")): n["note_id"] for n in before
                    if n["role"] == "section" and n["note_id"] in alive}
    index_title = cut(f"Research: {report.question}", words=40, chars=200)
    written: list[dict[str, Any]] = []
    if not report.sections:
        index = await _put(ctx, old_index, index_title, report.question, _single_body(report))
        written.append({"note_id": index["id"], "title": index["title"], "role": "index"})
    else:
        reused = [old_sections.pop(title_key(s.title), None) for s in report.sections]
        planned = [alive[n] if n is not None else s.title for n, s in zip(reused, report.sections, strict=True)]
        index = await _put(ctx, old_index, index_title, report.question, _index_body(report, planned))
        written.append({"note_id": index["id"], "title": index["title"], "role": "index"})
        for section, note_id in zip(report.sections, reused, strict=True):
            body = section.text + _sources_block([s for s in report.sources if s.n in section.sources])
            note = await _put(ctx, note_id, section.title, report.question, body, parent_id=index["id"])
            written.append({"note_id": note["id"], "title": note["title"], "role": "section",
                            "section": section.title})
        titles = [n["title"] for n in written[1:]]
        if titles != planned:  # a new note's title was taken: link the title it got
            await ctx.call("update_note", {"note_id": index["id"], "body": _index_body(report, titles)})
    for note_id in old_sections.values():  # sections no longer in the outline
        with contextlib.suppress(NotFound):  # deleted meanwhile
            await ctx.call("delete_note", {"note_id": note_id})
    run.notes, run.index_note_id = written, written[0]["note_id"]
    return written


async def _previous_notes(session: AsyncSession, ctx: Context, run: ResearchRun) -> list[dict[str, Any]]:
    notes = await session.scalar(
        select(ResearchRun.notes).where(owned_by(ResearchRun, ctx.caller), ResearchRun.question_key == run.question_key,
                                        ResearchRun.status == "done", ResearchRun.id != run.id)
        .order_by(ResearchRun.id.desc()).limit(1))
    return list(notes or [])


async def _titles(session: AsyncSession, ctx: Context, note_ids: list[int]) -> dict[int, str]:
    if not note_ids:
        return {}
    rows = await session.execute(select(Note.id, Note.title).where(
        Note.id.in_(note_ids), owned_by(Note, ctx.caller)).with_for_update())
    return {row.id: row.title for row in rows}


async def _put(ctx: Context, note_id: int | None, title: str, question: str, body: str,
               parent_id: int | None = None) -> dict[str, Any]:
    """Update note ``note_id`` with ``body`` (a new version, its title kept), or create a note
    (the title, else with the question or a number added when another note has it). The
    transaction holds the notes it updates from the lookup of their titles on (the lookup
    locks them), so none goes away in between."""
    if note_id is not None:
        fields: dict[str, Any] = {"note_id": note_id, "body": body}
        if parent_id is not None:
            fields["parent_id"] = parent_id
        return (await ctx.call("update_note", fields)).model_dump()
    short = cut(question, words=8, chars=60)
    candidates = [title, f"{title} ({short})", *(f"{title} ({short}, {n})" for n in range(2, 6))]
    fields = {"body": body, "tags": _TAGS, "confirm": True, **({"parent_id": parent_id} if parent_id else {})}
    for candidate in candidates:
        try:
            return (await ctx.call("create_note", {"title": candidate[:300], **fields})).model_dump()
        except Conflict as e:
            clash = e
    raise clash


def _index_body(report: Report, titles: list[str]) -> str:
    links = "\n".join(f"- [[{t}]]" for t in titles)
    summary = report.summary or "_The model wrote no summary._"
    return f"{summary}\n\n## Sections\n\n{links}{_sources_block(report.sources)}"


def _single_body(report: Report) -> str:
    return f"{report.text}{_sources_block(report.sources)}"


def _sources_block(sources: list[Source]) -> str:
    if not sources:
        return ""
    lines = "\n".join(f"- [{s.n}] [{_escaped(s.title)}]({s.url})" for s in sources)
    return f"\n\n## Sources\n\n{lines}"


def _escaped(text: str) -> str:
    return text.replace("[", "(").replace("]", ")")
