"""The sweep of answers whose process died: a background job (:mod:`fable_core.tools.jobs`).

A generating answer is flushed (its heartbeat) every ``flush_interval`` seconds (2); one whose
beat is :data:`~fable_core.infra.generations.STALE_AFTER` seconds (10) old has nobody
writing it, and the sweep, every :data:`EVERY` seconds, marks it ``interrupted`` (its text
stays) within about 12 s of its last beat, and deletes the shared generations of finished and
dead answers (:meth:`~fable_core.infra.shared_generations.SharedLog.sweep`). Research runs
have their own sweep, woken the same way (:mod:`fable_core.outside.research.runner`).

**Who sweeps.** As every job: the processes that run jobs (``fable serve``), one run at a time
across replicas (its advisory lock): one sweep is enough for everyone's answers. A process
that runs no jobs (``fable mcp`` over stdio) still ends what it follows: a follower that finds
its generation's beat stale runs the sweeps itself (:func:`sweep_now`). Each process also
sweeps once as its assistant starts.

**Never one's own, never an outage's gap.** The process sweeping never marks an answer it is
writing itself (its buffers say which), however old its beat: a database outage longer than the
stale bound stops every flush, and the sweep that runs as the database comes back must not take
that for death. Answers written by other replicas are judged by their writer's lease: a beat's
age counts from the latest of the beat, PostgreSQL's start and this process's own last loss of
the database (:func:`~fable_core.infra.generations.beat_stale`), so after an outage every writer
has a whole stale bound to beat again before anyone judges it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from fable_core.assistant.parts import ASSISTANT
from fable_core.errors import FableError
from fable_core.infra.generations import recover_interrupted
from fable_core.tools.jobs import job, run_woken

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["EVERY", "SWEEP", "sweep_interrupted_answers", "sweep_now"]

_log = logging.getLogger(__name__)
EVERY = 2.0  # seconds between sweeps
SWEEP = "fable_sweep"  # the wake channel of every sweep of runs whose process died


@job(every=EVERY, wake=SWEEP)
async def sweep_interrupted_answers(fable: Runtime) -> None:
    """Mark answers whose process died ``interrupted`` (never this process's own) and delete the
    generations nobody needs any more."""
    if (assistant := fable.part(ASSISTANT)) is None:
        return
    try:
        await recover_interrupted(fable.db, stale_after=assistant.stale_after,
                                  keep=assistant.generations.writing("chat"))
        await assistant.shared.sweep()
    except FableError as e:  # the database is down: the next sweep tries again
        _log.info("could not look for interrupted answers: %s", e.message)


async def sweep_now(fable: Runtime) -> None:
    """Run every sweep here, now (each unless another process is running it)."""
    await run_woken(fable, SWEEP)
