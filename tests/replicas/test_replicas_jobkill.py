"""kill -9 of the ``fable serve`` replica running a job: the other replica runs it.

A real job (``learn_profiles``: summarise a changed profile with the model) is scheduled every
two seconds for the test (``FABLE_JOB_EVERY``; its own schedule is hourly), on two replicas.
The fake Ollama holds the summary's answer, so the run stays inside the job. The replica running
it is the one whose database connection holds the job's advisory lock (``pg_locks``; each
replica names its connections ``fable <pid>`` in ``pg_stat_activity.application_name``). While
it runs, the other replica's ticks come and it runs nothing; once the holder is killed, the
other finds the lock free and the due time not done, runs the job, and the summary is stored.
The survivor's ``backfill_embeddings`` job then embeds a note no replica saw saved.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select, text
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled

from fable_core.config import Settings, load_settings
from fable_core.db.models import JobRun, NoteEmbedding, Profile
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import _LOCK_CLASS, JOBS, scheduled

_HOLDER = text("SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
               "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = :class AND l.objid = :key "
               "AND l.objsubid = 2")


def _replica_named(replicas: list[Any], application_name: str) -> int:
    """Which replica a connection is (each names its connections ``fable <pid>``)."""
    [index] = [i for i, r in enumerate(replicas) if application_name == f"fable {r.proc.pid}"]
    return index


async def _until(fable: Fable, query: Any) -> Any:
    """The first row's first value once there is one (within 30 s: the model's probe may be late)."""
    async with asyncio.timeout(scaled(30)):
        while True:
            async with fable.db.reading() as session:
                found = await session.scalar(query)
            if found is not None:
                return found
            await asyncio.sleep(0.1)


async def test_the_replica_running_a_job_killed_leaves_it_to_the_other(
        cluster: Any, fable: Fable, alice: Caller, replicas_llm: tuple[FakeLLM, str]) -> None:
    llm = replicas_llm[0]
    held = threading.Event()
    llm.plain_replies.extend([Reply("Never stored: its replica is killed.", hold=held),
                              Reply("Alice drinks green tea and plans her week on Sundays.")])
    await fable.call("update_profile", {"facts": ["drinks green tea", "plans the week on Sundays"]}, alice)
    learn = JOBS["learn_profiles"]
    key = {"class": _LOCK_CLASS, "key": learn.lock_key & 0xFFFF_FFFF}
    try:
        async with cluster(2, FABLE_JOB_EVERY="learn_profiles=2,backfill_embeddings=2") as c:
            async with asyncio.timeout(scaled(30)):
                while not llm.chat_bodies():  # a replica's run is in the job, waiting on the model  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            async with fable.db.reading() as session:
                holder = _replica_named(c.replicas, (await session.execute(_HOLDER, key)).scalar_one())
            await asyncio.sleep(2.5)  # a tick of the other replica comes and goes: it waits, runs nothing
            assert len(llm.chat_bodies()) == 1

            c.replicas[holder].proc.kill()
            await c.replicas[holder].proc.wait()
            summary = select(Profile.summary).where(Profile.user_id == alice.user_id, Profile.summary_at.is_not(None))
            assert await _until(fable, summary) == "Alice drinks green tea and plans her week on Sundays."
            assert await _until(fable, select(JobRun.due).where(JobRun.name == "learn_profiles"))  # recorded
            assert len(llm.chat_bodies()) == 2  # the killed run's request and the survivor's, no other
            async with fable.db.reading() as session:
                now_held_by = (await session.execute(_HOLDER, key)).scalar_one_or_none()
            assert now_held_by != f"fable {c.replicas[holder].proc.pid}"

            # a note no replica saw saved (as one saved through the killed replica before it
            # embedded it) is embedded by the surviving replica's backfill job
            assert fable.assistant is None or fable.assistant.worker is None  # the test runtime embeds nothing
            note = await fable.call("create_note", {"title": "Saved elsewhere", "body": "green tea"}, alice)
            assert await _until(fable, select(NoteEmbedding.note_id).where(NoteEmbedding.note_id == note["id"]))
    finally:
        held.set()  # the fake's held answer ends (nobody reads it)


def test_fable_job_every_gives_named_jobs_another_interval(settings: Settings) -> None:
    table = scheduled(settings.model_copy(update={"fable_job_every": ["learn_profiles=2", " purge_trash = 30"]}))
    learn, purge = table["learn_profiles"], table["purge_trash"]
    assert (learn.every, learn.cron) == (2.0, None) and learn.fn is JOBS["learn_profiles"].fn
    assert (purge.every, purge.cron) == (30.0, None)  # a cron job too
    at = datetime(2026, 12, 5, 15, 0, 3, tzinfo=UTC)
    assert learn.due(at) == at.replace(second=2)  # on the same 2 s grid in every replica
    assert scheduled(settings)["learn_profiles"].every == 3600
    with pytest.raises(InvalidInput, match="names no job 'nope'"):
        scheduled(settings.model_copy(update={"fable_job_every": ["nope=5"]}))
    for bad in ("learn_profiles", "learn_profiles=0", "learn_profiles=soon", "=5"):
        with pytest.raises(InvalidInput, match="FABLE_JOB_EVERY"):
            load_settings({"FABLE_JOB_EVERY": bad})
