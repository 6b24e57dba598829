"""Background generations: a task writes events into a buffer that any number of followers
replay and tail; the text reaches the database as it grows.

Event ids are ``<message id>:<n>`` with ``n`` counting from 1, so a follower that reconnects
with ``Last-Event-ID`` gets exactly the events after the one it saw — no gap, no repeat — and an
id from an older generation replays the current one from its start. The generating message is
flushed to the database every ``flush_interval`` seconds (default 2: a crash loses at most that
much) and its ``updated_at`` doubles as a heartbeat, so a message left ``generating`` by a dead
process is recognisable (:func:`recover_interrupted`, :data:`STALE_AFTER` seconds without a
beat) on any replica, whose sweep marks it ``interrupted`` within seconds. An outage is not a
death: a beat's age counts from the database's return at the earliest (:func:`beat_stale`), and
the writer stores its answer's end once the database is back (:data:`PATIENCE`). A finished buffer lives
on for ``grace`` seconds (default 60) for late followers; afterwards the stored message answers.

Replicas: a chat answer's key is also claimed in PostgreSQL, and its events are written there
in batches (:mod:`fable_core.infra.shared_generations`, ``shared``): followers on another
process replay and tail them, a stop reaches the process running it, and a second answer for
the same conversation is refused on every process. The buffer stays the fast path for
followers on the running process.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

from sqlalchemy import func, text, update

from fable_core.db.database import Database, rowcount
from fable_core.db.models import Message
from fable_core.errors import Conflict, FableError, Unavailable

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from fable_core.infra.shared_generations import RemoteFollow, SharedLog

__all__ = ["PATIENCE", "STALE_AFTER", "TAIL", "Buffer", "Generations", "StreamEvent", "beat_stale", "forget_dead",
           "mark_stale", "parse_event_id", "recover_interrupted"]

_log = logging.getLogger(__name__)
STALE_AFTER = 10.0  # seconds without a heartbeat after which a generating answer is interrupted
PATIENCE = 300.0  # seconds a live generation's writer and followers wait for a database that is down


@dataclass(frozen=True, slots=True)
class StreamEvent:
    id: str
    event: str
    data: dict[str, Any]


def parse_event_id(raw: str | None) -> tuple[int, int] | None:
    """``"<message>:<n>"`` → (message, n); None for anything else."""
    try:
        message, n = (raw or "").split(":")
        return int(message), int(n)
    except ValueError:
        return None


@dataclass
class Buffer:
    """The events of one generation, in order, and a signal for followers."""

    key: str
    message_id: int  # what the events are of: a chat answer's message, or a research run
    owner: int | None = None  # the user whose generation it is, when only they may follow it
    events: list[StreamEvent] = field(default_factory=list)
    done: bool = False
    started: bool = False
    stopped: bool = False
    task: asyncio.Task[None] | None = None
    followers: int = 0  # how many follow it right now (an answer nobody follows is told of when it ends)
    sink: SharedLog | None = None  # where its events are also written, for other processes' followers
    claim: str = ""  # its claim in PostgreSQL, with a sink
    _signal: asyncio.Event = field(default_factory=asyncio.Event)

    def emit(self, event: str, data: dict[str, Any]) -> StreamEvent:
        item = StreamEvent(f"{self.message_id}:{len(self.events) + 1}", event, data)
        self.events.append(item)
        self._wake()
        if self.sink is not None:
            self.sink.emitted(self, item)
        return item

    def finish(self) -> None:
        if not self.done and self.sink is not None:
            self.sink.finished(self)
        self.done = True
        self._wake()

    def _wake(self) -> None:
        self._signal.set()
        self._signal = asyncio.Event()

    def position_after(self, last_event_id: str | None) -> int:
        parsed = parse_event_id(last_event_id)
        if parsed is None or parsed[0] != self.message_id:
            return 0
        return min(max(parsed[1], 0), len(self.events))

    async def follow(self, last_event_id: str | None = None, *,
                     heartbeat: float | None = None) -> AsyncIterator[StreamEvent | None]:
        """Every event after ``last_event_id``, then new ones as they come, until done; with
        ``heartbeat``, ``None`` after that many quiet seconds (for keep-alive comments)."""
        position = self.position_after(last_event_id)
        self.followers += 1
        try:
            while True:
                signal = self._signal
                while position < len(self.events):
                    yield self.events[position]
                    position += 1
                if self.done:
                    return
                try:
                    await asyncio.wait_for(signal.wait(), heartbeat)
                except TimeoutError:
                    yield None
        finally:
            self.followers -= 1


Runner = Callable[[Buffer], Awaitable[None]]


class Generations:
    """The generations this process runs, by key (``chat:<conversation>``, ``assist:<note>``, and
    research runs, ``research:<user>``: :mod:`fable_core.outside.research.runner`)."""

    def __init__(self, *, grace: float = 60.0, shared: SharedLog | None = None) -> None:
        self.shared = shared  # claims and events in PostgreSQL, for the other processes
        self.grace = grace
        if shared is not None:
            shared.stop_local = self.stop
        self._buffers: dict[str, Buffer] = {}
        self._drops: dict[str, asyncio.TimerHandle] = {}
        self._reserved: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()  # every runner still running, done or not

    @property
    def grace(self) -> float:
        """How long a finished generation's events are kept for late followers (seconds)."""
        return self._grace

    @grace.setter
    def grace(self, seconds: float) -> None:
        self._grace = seconds
        if self.shared is not None:
            self.shared.grace = seconds

    def get(self, key: str) -> Buffer | None:
        return self._buffers.get(key)

    def writing(self, kind: str) -> list[int]:
        """The message (or run) ids of the generations of ``kind`` (``chat``, ``research``) this
        process is writing now: alive, whatever their heartbeat says."""
        return [b.message_id for key, b in self._buffers.items() if key.startswith(f"{kind}:") and not b.done]

    def running(self, key: str) -> bool:
        buffer = self._buffers.get(key)
        return key in self._reserved or (buffer is not None and not buffer.done)

    def reserve(self, key: str) -> None:
        """Claim ``key`` for a generation about to start; Conflict if one runs or is starting."""
        if self.running(key):
            raise Conflict("a generation is already running here; stop it or wait for it", key=key)
        self._reserved.add(key)

    async def claim(self, key: str, conn: AsyncConnection | None = None) -> None:
        """Claim ``key`` here and, with ``shared``, on every process (``conn``: an autocommit
        connection to claim it on); Conflict if a generation runs or is starting anywhere."""
        self.reserve(key)
        if self.shared is not None:
            try:
                await self.shared.claim(key, conn)
            except BaseException:
                self._reserved.discard(key)
                raise

    def release(self, key: str) -> None:
        self._reserved.discard(key)
        if self.shared is not None:
            self.shared.release(key)

    def start(self, key: str, message_id: int, runner: Runner, *, owner: int | None = None) -> Buffer:
        if key in self._reserved:
            self._reserved.discard(key)
        elif self.running(key):
            raise Conflict("a generation is already running here; stop it or wait for it", key=key)
        if key in self._drops:
            self._drops.pop(key).cancel()
        buffer = Buffer(key, message_id, owner)
        if self.shared is not None:
            self.shared.attach(buffer)  # a key claimed on every process: its events go to PostgreSQL too
        self._buffers[key] = buffer
        buffer.task = asyncio.create_task(self._run(buffer, runner), name=f"fable-generation-{key}")
        self._tasks.add(buffer.task)
        buffer.task.add_done_callback(self._tasks.discard)
        return buffer

    async def _run(self, buffer: Buffer, runner: Runner) -> None:
        buffer.started = True
        try:
            await runner(buffer)
        except asyncio.CancelledError:
            if not buffer.stopped:
                raise
        except Exception:  # noqa: BLE001 - logged; followers get the end of the buffer
            _log.exception("generation %s failed", buffer.key)
        finally:
            buffer.finish()
            loop = asyncio.get_running_loop()
            self._drops[buffer.key] = loop.call_later(self.grace, self._drop, buffer)

    def _drop(self, buffer: Buffer) -> None:
        if self._buffers.get(buffer.key) is buffer:
            del self._buffers[buffer.key]
        self._drops.pop(buffer.key, None)

    def stop(self, key: str) -> bool:
        """Cancel the running generation; True if there was one."""
        buffer = self._buffers.get(key)
        if buffer is None or buffer.done or buffer.task is None:
            return False
        buffer.stopped = True
        if buffer.started:  # otherwise the runner sees ``stopped`` as it starts
            buffer.task.cancel()
        return True

    async def shared_follow(self, key: str, last_event_id: str | None, *,
                            heartbeat: float | None = None) -> RemoteFollow | None:
        """A follower of ``key``'s generation as another process runs it (from PostgreSQL); None
        without ``shared``, or when no other process runs one."""
        if self.shared is None:
            return None
        return await self.shared.open(key, last_event_id, heartbeat=heartbeat)

    async def stop_anywhere(self, key: str) -> bool:
        """Stop the generation, here or (with ``shared``) on whichever process runs it; True if
        one runs."""
        if self.stop(key):
            return True
        return self.shared is not None and await self.shared.request_stop(key)

    def forget(self, key: str) -> None:
        """Stop the generation and drop its buffer: later followers find none (followers already
        reading it get its end); with ``shared``, one another process runs is asked to stop too."""
        if not self.stop(key) and self.shared is not None:
            self.shared.stop_soon(key)
        buffer = self._buffers.pop(key, None)
        if buffer is not None and key in self._drops:
            self._drops.pop(key).cancel()

    async def wait(self, key: str) -> None:
        buffer = self._buffers.get(key)
        if buffer is not None and buffer.task is not None:
            await asyncio.gather(buffer.task, return_exceptions=True)

    async def close(self) -> None:
        # Not only unfinished answers: a finished one may still be titling its conversation. That
        # last step gets TAIL seconds first (a command that waited for the answer, and closes right
        # after it, would otherwise cut it); what is left then is cancelled with the unfinished.
        tails = {b.task for b in self._buffers.values() if b.done and b.task is not None and not b.task.done()}
        if tails:
            await asyncio.wait(tails, timeout=TAIL)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for handle in self._drops.values():
            handle.cancel()
        self._drops.clear()
        self._buffers.clear()
        if self.shared is not None:  # what the cancelled runners said last, for other processes
            await self.shared.flush()


class MessageWriter:
    """Writes a generating message's text to the database every ``interval`` seconds."""

    def __init__(self, db: Database, message_id: int, *, interval: float = 2.0) -> None:
        self.db = db
        self.message_id = message_id
        self.interval = interval
        self.content = ""
        self.tool_events: list[dict[str, Any]] = []
        self.context: dict[str, Any] | None = None
        self._task: asyncio.Task[None] | None = None

    def __enter__(self) -> Self:
        self._task = asyncio.create_task(self._loop(), name=f"fable-flush-{self.message_id}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.flush()
            except FableError as e:  # the database is down: the next tick tries again
                _log.info("flushing message %s failed: %s", self.message_id, e.message)
            except Exception:  # noqa: BLE001 - a failed flush is retried at the next tick
                _log.warning("flushing message %s failed", self.message_id, exc_info=True)

    async def flush(self, status: str | None = None, *, patience: float = PATIENCE, **extra: Any) -> None:
        """Write the text so far; with ``status`` (the answer's end), patiently: while the
        database is down it is tried again for up to ``patience`` seconds — the answer is this
        process's, alive, and ends as it ended, not as the outage left it."""
        if status is None:
            await self._write(None, extra)
            return
        loop = asyncio.get_running_loop()
        deadline, pause = loop.time() + patience, 0.25
        while True:
            try:
                await self._write(status, extra)
            except Unavailable as e:
                if loop.time() + pause > deadline:
                    raise
                _log.info("message %s waits for the database to store its end: %s", self.message_id, e.message)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 2.0)
            else:
                return

    async def _write(self, status: str | None, extra: dict[str, Any]) -> None:
        values: dict[str, Any] = {"content": self.content, "tool_events": self.tool_events or None,
                                  "updated_at": func.now(), **extra}
        if self.context is not None:
            values["context"] = self.context
        if status is not None:
            values["status"] = status
        where = [Message.id == self.message_id]
        if status is None:
            # A periodic flush that lost the race to the final one (it read older text) must not
            # overwrite the final text: it only touches a message still generating.
            where.append(Message.status == "generating")
        async with self.db.transaction() as s:
            await s.execute(update(Message).where(*where).values(**values))




def beat_stale(column: str, seconds: str) -> str:
    """SQL: whether the heartbeat in ``column`` is more than ``seconds`` (a parameter) old — counted
    not from the beat alone but from the latest of the beat, the server's start and the judging
    process's last loss of the database (``:reached`` seconds ago: :meth:`Database.reached_for`).
    A writer's lease is judged by whether it could have beaten: while PostgreSQL was down (or
    out of this judge's reach) nobody could, and the gap an outage leaves in every beat is not a
    death. ``column`` and ``seconds``: this code's words, never a user's."""
    return (f"greatest({column}, pg_postmaster_start_time(), now() - make_interval(secs => :reached)) "
            f"< now() - make_interval(secs => {seconds})")
TAIL = 5.0  # seconds a finished generation's last steps (a title) get at close, before they are cancelled
DIED = "the process writing this answer stopped (a crash or a restart) before the answer was finished"


# The generations (:mod:`.shared_generations`) of runs no longer being written whose process
# stopped beating (``:beat`` seconds): their rows and events go, and their followers elsewhere end
# with the stored run's end. A live process beats every second; its row waits ``done`` for a
# moment after its run's last flush. ``{kind}``, ``{table}``: this code's words, never a user's.
_FORGET_DEAD = """
WITH gone AS (
    DELETE FROM generations g
    WHERE g.key LIKE '{kind}:%' AND NOT g.done AND g.message_id IS NOT NULL
      AND {stale}
      AND NOT EXISTS (SELECT 1 FROM {table} r WHERE r.id = g.message_id AND r.status = :running)
    RETURNING g.key
)
DELETE FROM generation_events e USING gone WHERE e.key = gone.key
"""


async def forget_dead(db: Database, *, kind: str, table: str, running: str, beat: float = 3.0) -> None:
    """Delete the shared generations of kind ``kind`` (``chat``, ``research``) whose process
    stopped beating and whose run (a row of ``table``) is no longer ``running``: what a sweep
    does after marking a dead process's runs interrupted, so that their followers on other
    processes end now rather than after the grace."""
    async with db.transaction() as s:
        await s.execute(text(_FORGET_DEAD.format(kind=kind, table=table, stale=beat_stale("g.heartbeat", ":beat"))),
                        {"beat": beat, "running": running, "reached": db.reached_for()})


# An answer's text is flushed every 2 s, its events (for followers on other replicas) every 50 ms:
# a dead writer's events may hold more of its text than its message. Its answer keeps the longer.
_STORED_TEXT = """, content = coalesce((
    SELECT t FROM (SELECT string_agg(e.data->>'text', '' ORDER BY e.seq) AS t FROM generation_events e
                   WHERE e.key = 'chat:' || messages.conversation_id AND e.message_id = messages.id
                     AND e.event = 'token') stored
    WHERE length(t) > length(messages.content)), messages.content)"""


async def recover_interrupted(db: Database, *, stale_after: float = STALE_AFTER, keep: Collection[int] = ()) -> int:
    """Mark messages whose generator stopped beating (a crashed process) ``interrupted``, but
    those in ``keep`` (the ones the calling process is writing); their partial text stays (the
    longer of the last flush and the text its stored events hold); their generations' rows go
    (their followers on other processes end). Returns how many."""
    marked = await mark_stale(db, "messages", running="generating", died=DIED, stale_after=stale_after, keep=keep,
                              also=_STORED_TEXT)
    await forget_dead(db, kind="chat", table="messages", running="generating", beat=min(stale_after, 3.0))
    return marked


async def mark_stale(db: Database, table: str, *, running: str, died: str, stale_after: float,
                     also: str = "", keep: Collection[int] = ()) -> int:
    """Mark the rows of ``table`` (a table of this code's, never a user's word) whose ``status``
    is ``running`` and whose ``updated_at`` heartbeat is over ``stale_after`` seconds old
    ``interrupted``, with ``died`` as their ``error`` (and ``also``, more assignments), but the
    rows ``keep`` names (the caller's own, alive whatever their beat). What every background
    run's sweep does (chat answers; research runs: :mod:`fable_core.outside.research.runner`)."""
    async with db.transaction() as s:
        result = await s.execute(text(
            f"UPDATE {table} SET status = 'interrupted', error = :died{also} WHERE status = :running "
            f"AND {beat_stale('updated_at', ':secs')} AND NOT id = ANY(CAST(:keep AS bigint[]))"
        ), {"secs": stale_after, "died": died, "running": running, "keep": list(keep), "reached": db.reached_for()})
    return rowcount(result)
