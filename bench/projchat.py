"""Projects and chat benchmark: what the project board, its moves and the chat's conversation
search cost for a busy user.

    python -m bench.projchat [--conversations 2000] [--messages 20] [--tasks 500] [--runs 100] [--no-write]

One fresh embedded PostgreSQL in a temporary directory. One user with ``--conversations``
conversations of ``--messages`` messages each (SQL inserts: a few sentences that vary), and a
project of ``--tasks`` tasks over 10 milestones. Timed, one at a time after a warm-up, through
the dispatcher: ``list_conversations`` with a one-word and a two-word ``query`` (the chat's
conversation search; a rare word and a common one), the board's two reads (``get_project``,
``list_notes`` of its tasks, 200 a page) and a card's move (``update_note`` with another
``milestone_id``: a drag and drop). Target: conversation search p50 < 100 ms at 40,000
messages. Results go to the "projchat" section of docs/benchmarks.md.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import cycle
from typing import Any

from sqlalchemy import text

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    conversations: int = 2000
    messages: int = option(20, "per conversation")
    tasks: int = 500
    runs: int = option(100, "calls of each kind")


MILESTONES = 10
_SAID = ["How do I prune the apple tree?", "Summarise my meeting notes from Tuesday.",
         "What is left on the kitchen project?", "Draft a reply to the landlord about the boiler.",
         "Which tasks are overdue this week?", "Remind me what the dentist said."]


@dataclass
class Result:
    conversations: int
    messages: int
    tasks: int
    load_seconds: float
    calls: dict[str, list[float]] = field(default_factory=dict)

    def p(self, name: str, q: float) -> float:
        ms = sorted(s * 1000 for s in self.calls[name])
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


async def _sql(fable: Fable, sql: str, **params: Any) -> Any:
    async with fable.db.engine.begin() as conn:
        return await conn.execute(text(sql), params)


async def _world(fable: Fable, conversations: int, messages: int, tasks: int) -> tuple[Caller, int, list[int], int]:
    me = await _make_user(fable)
    await _sql(fable, """
        INSERT INTO conversations (user_id, title, conversation_type)
        SELECT :me, 'Chat ' || g, 'chat' FROM generate_series(1, :n) g""", me=me.user_id, n=conversations)
    await _sql(fable, """
        INSERT INTO messages (conversation_id, user_id, role, content)
        SELECT c.id, :me, CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END,
               (ARRAY[:a, :b, :c, :d, :e, :f])[1 + (c.id + i) % 6] || ' (' || c.id || '-' || i || ')'
        FROM conversations c, generate_series(1, :m) i WHERE c.user_id = :me""",
               me=me.user_id, m=messages, a=_SAID[0], b=_SAID[1], c=_SAID[2], d=_SAID[3], e=_SAID[4], f=_SAID[5])
    await _sql(fable, "UPDATE messages SET content = content || ' quince' WHERE user_id = :me AND id % 997 = 0",
               me=me.user_id)
    project = (await fable.call("create_project", {"title": "Kitchen"}, me))["id"]
    milestones = [(await fable.call("create_milestone", {"project_id": project, "title": f"Stage {i}"}, me))["id"]
                  for i in range(MILESTONES)]
    await _sql(fable, """
        INSERT INTO notes (user_id, title, title_key, body, status, project_id, milestone_id, version)
        SELECT :me, 'Task ' || g, 'task ' || g, '', 'todo', :p, (CAST(:ms AS integer[]))[1 + g % :k], 1
        FROM generate_series(1, :n) g""", me=me.user_id, p=project, ms=milestones, k=MILESTONES, n=tasks)
    task = (await _sql(fable, "SELECT min(id) FROM notes WHERE project_id = :p", p=project)).scalar_one()
    await _sql(fable, "ANALYZE")
    return me, project, milestones, task


async def run(fable: Fable, conversations: int, messages: int, tasks: int, runs: int) -> Result:
    started = time.perf_counter()
    me, project, milestones, task = await _world(fable, conversations, messages, tasks)
    load = time.perf_counter() - started
    targets = cycle(milestones)
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "list_conversations, query: a rare word": lambda: fable.call("list_conversations", {"query": "quince"}, me),
        "list_conversations, query: two common words": lambda: fable.call(
            "list_conversations", {"query": "kitchen project"}, me),
        "get_project (the board's head)": lambda: fable.call("get_project", {"project_id": project}, me),
        "list_notes, the project's tasks": lambda: fable.call(
            "list_notes", {"project_id": project, "kind": "task", "sort": "due", "limit": 200}, me),
        "update_note milestone_id (a card's move)": lambda: fable.call(
            "update_note", {"note_id": task, "milestone_id": next(targets)}, me),
    }
    for call in calls.values():
        for _ in range(3):
            await call()
    counted = (await _sql(fable, "SELECT count(*) FROM messages WHERE user_id = :me", me=me.user_id)).scalar_one()
    result = Result(conversations=conversations, messages=counted, tasks=tasks, load_seconds=load,
                    calls={name: [] for name in calls})
    for _ in range(runs):  # the calls take turns: the machine drifts
        for name, call in calls.items():
            begun = time.perf_counter()
            await call()
            result.calls[name].append(time.perf_counter() - begun)
    return result


_SEARCH = "list_conversations, query: two common words"


def figures(r: Result) -> list[Figure]:
    return [Figure(f"conversation search p50 at {r.messages:,} messages", r.p(_SEARCH, .5), "ms", "time"),
            Figure(f"board tasks p50 at {r.tasks:,} tasks", r.p("list_notes, the project's tasks", .5), "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {len(samples)} | {machine.ms(r.p(name, .5))} | {machine.ms(r.p(name, .95))} |"
            for name, samples in r.calls.items()]
    p50 = r.p(_SEARCH, .5)
    met = machine.normalise(p50, "time") < 100
    return "\n".join([
        "## Projects and chat (`python -m bench.projchat`)",
        "",
        (f"One user with {r.conversations:,} conversations ({r.messages:,} messages) and a project of "
         f"{r.tasks:,} tasks over {MILESTONES} milestones; every call through the dispatcher, one at a time "
         f"(loading took {r.load_seconds:.0f} s). Conversation search matches each word in titles and "
         f"message text (`ILIKE`, no index). Cells are ms."),
        "",
        machine.describe(),
        "",
        "| Call | Samples | p50 | p95 |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| conversation search p50 at {r.messages:,} messages | {machine.ms(p50)} ms | < 100 ms | "
        f"{'yes' if met else '**no**'} |",
    ])


BENCH = Bench("projchat", __doc__, Options,
              lambda o: on_one_fable(lambda fable: run(fable, o.conversations, o.messages, o.tasks, o.runs)), render,
              figures, quick=Options(conversations=100, tasks=50, runs=10))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
