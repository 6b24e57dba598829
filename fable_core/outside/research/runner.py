"""Research runs in the background, on the assistant's generations (:mod:`fable_core.infra.generations`).

A run is a row of ``research_runs`` and a generation keyed ``research:<user>``: one running run
per user (the key, claimed on every process, and a partial unique index), so one user cannot
hog the model. The run's task writes the pipeline's events into the generation's buffer, which
followers replay and tail (event ids ``<run>:<n>``, resumable); a follower going away (a client
disconnecting) leaves the run going. The events also go to PostgreSQL, so a run is followed,
resumed and stopped through any replica (:mod:`fable_core.infra.shared_generations`).
While it runs, the row's ``updated_at`` is touched every
:data:`HEARTBEAT` seconds; a run whose process died stops beating and :func:`sweep_interrupted`
marks it ``interrupted``: the job :func:`sweep_interrupted_research` (every 2 s, beside the
chat answers' sweep, :mod:`fable_core.assistant.sweeps`, and woken with it), and before each start.

How a run ends: ``done`` (its notes and the row written in one transaction), ``error`` (the
pipeline failed: nothing written), ``stopped`` (stop_research: nothing written, even when
stopped while writing: the transaction is rolled back) or ``interrupted``. Its last event is
``done``, ``error`` or ``stopped``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select, update

from fable_core.assistant.parts import ASSISTANT
from fable_core.assistant.providers import NoProvider, Provider, unavailable
from fable_core.assistant.sweeps import EVERY, SWEEP
from fable_core.db.database import Database
from fable_core.db.models import ResearchRun
from fable_core.errors import Conflict, FableError, NotFound
from fable_core.infra.generations import Buffer, Generations, forget_dead, mark_stale
from fable_core.outside.research.pipeline import Pipeline, Report
from fable_core.outside.research.writing import question_key, write_report
from fable_core.outside.websearch.searxng import searxng_url
from fable_core.tools import Context
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.dispatcher import InternalError
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.assistant.service import Assistant
    from fable_core.tools.runtime import Runtime

__all__ = ["HEARTBEAT", "STALE_AFTER", "find_run", "generations", "install", "research_key", "start_run",
           "sweep_interrupted", "sweep_interrupted_research"]

_log = logging.getLogger(__name__)
HEARTBEAT = 2.0
STALE_AFTER = 15.0
DIED = "the process running this research stopped (a crash or a restart) before it was finished"


def research_key(user_id: int) -> str:
    return f"research:{user_id}"


def generations(fable: Runtime) -> Generations:
    return _assistant(fable).generations


def _assistant(fable: Runtime) -> Assistant:
    if (assistant := fable.part(ASSISTANT)) is None:
        raise unavailable("the assistant is not running")
    return assistant


async def find_run(session: Any, caller: Caller, run_id: int) -> ResearchRun:
    run: ResearchRun | None = await session.scalar(
        select(ResearchRun).where(ResearchRun.id == run_id, owned_by(ResearchRun, caller)))
    if run is None:
        raise NotFound(f"research run {run_id} not found", run_id=run_id)
    return run


async def start_run(ctx: Context, question: str) -> Buffer:
    """Record a run of ``question`` and start it in the background. Conflict while the caller
    has one running; Unavailable without a model or SearXNG."""
    fable = ctx.fable
    assistant = _assistant(fable)
    if isinstance(assistant.provider, NoProvider):
        raise unavailable("LLM_PROVIDER is none", provider="none")
    searxng_url(ctx.settings)
    key = research_key(ctx.user_id)
    await sweep_interrupted(fable.db)
    await _claim(ctx, assistant.generations, key)
    try:
        run_id = await _record(ctx, question)
    except BaseException:
        assistant.generations.release(key)
        raise
    job = _Run(fable, ctx.caller, run_id, question, assistant.model(ctx.caller))
    return assistant.generations.start(key, run_id, job.run, owner=ctx.user_id)


async def _claim(ctx: Context, runs: Generations, key: str) -> None:
    """Claim the user's research slot on every process; Conflict naming the run holding it."""
    try:
        await runs.claim(key)
    except Conflict as e:
        holder = runs.get(key)
        running = holder.message_id if holder is not None and not holder.done else None
        if running is None:  # another process runs it, or it is starting
            async with ctx.reading() as session:
                running = await session.scalar(select(ResearchRun.id).where(
                    owned_by(ResearchRun, ctx.caller), ResearchRun.status == "running"))
        if running is None:
            raise Conflict("a research run of yours is starting; wait for it") from e
        raise Conflict(f"research run {running} is still running; stop it or wait for it", run_id=running) from e


async def _record(ctx: Context, question: str) -> int:
    """The new run's row; Conflict when the caller has one running in another process."""
    async with ctx.transaction() as session:
        running = await session.scalar(select(ResearchRun.id).where(
            owned_by(ResearchRun, ctx.caller), ResearchRun.status == "running"))
        if running is not None:
            raise Conflict(f"research run {running} is still running; stop it or wait for it", run_id=running)
        run = ResearchRun(user_id=ctx.user_id, question=question, question_key=question_key(question))
        session.add(run)
        await session.flush()
        return run.id


class _Run:
    """The background part of one run."""

    def __init__(self, fable: Runtime, caller: Caller, run_id: int, question: str, model: Provider) -> None:
        self.fable = fable
        self.caller = replace(caller, surface="internal")
        self.run_id = run_id
        self.question = question
        self.model = model
        self.pipeline: Pipeline | None = None

    async def run(self, buffer: Buffer) -> None:
        beat = asyncio.create_task(self._beat(), name=f"fable-research-beat-{self.run_id}")
        try:
            if buffer.stopped:  # stopped before it started: as a stop mid-run
                raise asyncio.CancelledError  # noqa: TRY301 - handled below on purpose
            self.pipeline = Pipeline(self.model, self.fable.settings, buffer.emit)
            report = await self.pipeline.run(self.question)
            notes = await self._write(report)
            buffer.emit("done", {"run_id": self.run_id, "notes": notes})
        except asyncio.CancelledError:
            status = "stopped" if buffer.stopped else "interrupted"
            await asyncio.shield(self._end(status, None if buffer.stopped else "Fable stopped before it finished"))
            buffer.emit("stopped", {"run_id": self.run_id, "status": status})
            raise
        except FableError as e:
            await self._end("error", e.message)
            buffer.emit("error", {"run_id": self.run_id, **e.to_dict()})
        except Exception:  # noqa: BLE001 - a bug must not leave the run "running" for ever
            _log.exception("research run %s failed unexpectedly", self.run_id)
            failed = InternalError("the research failed unexpectedly; the error was logged")
            await self._end("error", failed.message)
            buffer.emit("error", {"run_id": self.run_id, **failed.to_dict()})
        finally:
            beat.cancel()

    def _context(self) -> Context:
        return Context(caller=self.caller, settings=self.fable.settings, runtime=self.fable,
                       dispatcher=self.fable.dispatcher)

    async def _write(self, report: Report) -> list[dict[str, Any]]:
        """Every note and the run's row, in one transaction."""
        ctx = self._context()
        async with ctx.transaction() as session:
            run = await find_run(session, self.caller, self.run_id)
            notes = await write_report(ctx, session, run, report)
            run.status, run.finished_at = "done", func.now()
            run.queries, run.sources = report.queries, [s.cited() for s in report.sources]
        await self.fable.events.publish(ctx.events)
        return notes

    async def _end(self, status: str, error: str | None) -> None:
        values: dict[str, Any] = {"status": status, "error": error, "finished_at": func.now()}
        if self.pipeline is not None:
            values.update(queries=self.pipeline.queries or None,
                          sources=[s.cited() for s in self.pipeline.sources] or None)
        try:
            async with self.fable.db.transaction() as session:
                await session.execute(update(ResearchRun).where(ResearchRun.id == self.run_id,
                                                                ResearchRun.status == "running").values(**values))
        except FableError as e:  # the database is down: the sweep marks it interrupted later
            _log.warning("could not record the end of research run %s: %s", self.run_id, e.message)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT)
            try:
                async with self.fable.db.transaction() as session:
                    await session.execute(update(ResearchRun).where(
                        ResearchRun.id == self.run_id, ResearchRun.status == "running").values(updated_at=func.now()))
            except FableError as e:
                _log.info("research run %s: heartbeat failed: %s", self.run_id, e.message)


async def sweep_interrupted(db: Database, *, stale_after: float = STALE_AFTER, keep: list[int] | None = None) -> int:
    """Mark running runs without a heartbeat for ``stale_after`` seconds ``interrupted`` (their
    process died), everyone's (a dead run is dead whoever's it is, and the sweep is one UPDATE
    on a partial index) but those in ``keep`` (the calling process's own); their shared
    generations go, so followers on other processes end. Returns how many."""
    marked = await mark_stale(db, "research_runs", running="running", died=DIED, stale_after=stale_after,
                              also=", finished_at = now()", keep=keep or ())
    await forget_dead(db, kind="research", table="research_runs", running="running")
    return marked


@job(every=EVERY, wake=SWEEP)
async def sweep_interrupted_research(fable: Runtime) -> None:
    """Mark research runs whose process died ``interrupted`` (never this process's own), in the
    processes that run jobs, one at a time across replicas, as the chat answers' sweep."""
    if (assistant := fable.part(ASSISTANT)) is None:
        return
    try:
        await sweep_interrupted(fable.db, keep=assistant.generations.writing("research"))
    except FableError as e:  # the database is down: the next sweep tries again
        _log.info("could not look for interrupted research runs: %s", e.message)


async def install(fable: Runtime) -> None:
    """The research capability's hook: the runs whose process died are marked once now (the job
    goes on every 2 s where jobs run)."""
    if fable.part(ASSISTANT) is not None:
        await sweep_interrupted(fable.db)
