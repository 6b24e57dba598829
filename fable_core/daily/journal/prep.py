"""The morning prep: gather the day's sections, write the opener, store it as the first message
of the day's journal conversation.

1. **Claim** the day's ``journal_days`` row (made if new), locked ``FOR UPDATE``: it turns
   ``preparing`` with a lease of :data:`LEASE`, which its holder renews while it works (every
   :data:`RENEW`), and ``attempts`` counts up. Whoever finds a live claim (another process, a
   second click) does not prepare the day too; a claim past its lease (its holder died: killed,
   or cut off from the database for longer than the lease) is taken over. The holder writes its
   opener only while the row still carries its attempt, so one taken over writes nothing.
2. **Gather** every registered section (:func:`fable_core.daily.journal.sections.sections`), in
   order, as the day's user, in one read-only session: deterministic and cheap (the budget is
   100 ms at 100k notes, see ``bench/journal.py``). A section that raises is logged and left out.
3. **Write** the opener: one LLM call turns the gathered JSON into a few sentences of prose;
   with no model configured, or when the call fails, each section's ``render`` writes its
   lines (a structured opener). ``opener_source`` says which.
4. **Store** it as an assistant message and mark the day ``done``.

Preparing twice never makes two openers. The scheduled prep (the job in :mod:`.schedule`)
prepares a day once: a day done, skipped or held by a live claim is left alone; a day the user
has already written in is ``skipped`` (the opener must come first). **Retries.** A failed
attempt (scheduled or by hand) leaves the day ``failed`` with its reason and a ``retry_at``
(:data:`BACKOFF` after the first, second, ... failure); the job tries it again from then, and
so a claim whose holder died, until :data:`MAX_ATTEMPTS` attempts: then the day stays
``failed``, its ``error`` saying it gave up and why, until someone prepares it by hand.
"Prepare now" (:func:`prepare_journal`) *replaces* the opener until the user has written in the
day; after that it refuses (Conflict), since the opener would no longer be the first message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time as clock
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, exists, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.assistant.answers import ungrounded
from fable_core.assistant.gate import background
from fable_core.assistant.parts import ASSISTANT
from fable_core.assistant.providers import NoProvider

# the sections the journal writes itself: imported so that they are registered wherever the prep is
from fable_core.daily.journal import morning  # noqa: F401
from fable_core.daily.journal.days import Day, DayView, check_day, day_view, journal_clock, open_day, prep_day, today_of
from fable_core.daily.journal.sections import PrepDay, Section, sections
from fable_core.db.models import Conversation, JournalDay, Message, User
from fable_core.errors import Conflict, FableError, NotFound
from fable_core.people.preferences.personal import DEFAULT_MODEL
from fable_core.people.profile.prompt import profile_prompt
from fable_core.tools import Context, Route, tool
from fable_core.tools.caller import Caller
from fable_core.tools.preferences import read_settings

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["BACKOFF", "DIED", "LEASE", "MAX_ATTEMPTS", "RENEW", "Claim", "Gathered", "claimable", "gather",
           "prepare", "structured_opener", "user_caller"]

_log = logging.getLogger(__name__)
LEASE = timedelta(seconds=90)  # how long a claim holds unless its holder renews it
RENEW = LEASE / 3  # how often a holder renews: two renewals may fail before others take over
MAX_ATTEMPTS = 4  # claims a day gets from the job before it stays failed
BACKOFF = (timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=15))  # after failure 1, 2, 3
DIED = "the prep stopped before it finished (its process died or lost the database)"
OPENER_TOKENS = 400
_PROMPT = (
    "You write the opening note of {who}'s daily journal for {day}. From the JSON below (what "
    "Fable gathered for the day), write a short, warm morning note in plain prose, at most 120 "
    "words: what is due or overdue, what is on, what was left open. Use only what the data says; "
    "no headings, no lists, no greeting beyond one short line."
)


@dataclass(frozen=True, slots=True)
class Claim:
    """A prep's hold on a day: its row, its attempt (the row's ``attempts`` when claimed: the
    fence) and the time it was claimed at, on the clock the prep was given."""

    row_id: int
    attempt: int
    at: datetime


@dataclass(frozen=True, slots=True)
class Gathered:
    """What the sections said about a day, in note order (sections with nothing left out)."""

    parts: list[tuple[Section, Any]]
    failed: list[str]
    ms: float

    def as_json(self) -> dict[str, Any]:
        return {s.name: data for s, data in self.parts}


async def gather(session: AsyncSession, caller: Caller, day: PrepDay) -> Gathered:
    """Ask every registered section for its part of ``day``; a failing one is logged and left out."""
    started = clock.perf_counter()
    parts: list[tuple[Section, Any]] = []
    failed: list[str] = []
    for section in sections():
        try:
            data = await section.gather(session, caller, day)
        except Exception:  # noqa: BLE001 - one section's bug or outage never stops the morning note
            _log.exception("morning-note section %r failed for user %s on %s", section.name, caller.user_id, day.day)
            failed.append(section.name)
            await session.rollback()
            continue
        if data:
            parts.append((section, data))
    return Gathered(parts, failed, (clock.perf_counter() - started) * 1000)


def structured_opener(day: date, gathered: Gathered) -> str:
    """The opener without a model: each section's own lines, under the day's heading."""
    lines = [f"**{day:%A} {day.day} {day:%B}**"]
    for section, data in gathered.parts:
        try:
            lines.append((f"**{section.title}**\n" if section.title else "") + section.render(data).strip())
        except Exception:  # noqa: BLE001 - a render bug leaves its section out, like a gather's
            _log.exception("morning-note section %r could not render", section.name)
    if len(lines) == 1:
        lines.append("Nothing due, nothing left open: a blank page.")
    return "\n\n".join(line for line in lines if line)


async def user_caller(session: AsyncSession, user_id: int) -> Caller:
    """The day's user as the caller a prep runs as (their own access rules)."""
    user = (await session.execute(select(User.username, User.role).where(User.id == user_id))).one_or_none()
    if user is None:
        raise NotFound(f"user {user_id} not found", user_id=user_id)
    return Caller(user_id=user_id, username=user.username, role=user.role, surface="internal")


async def prepare(fable: Runtime, caller: Caller, day: date, *, manual: bool,
                  now: datetime | None = None) -> DayView | None:
    """Prepare ``day``'s journal for ``caller``. Scheduled (``manual=False``): None when there is
    nothing to do (done, skipped, held by a live claim, failed and not yet due again, or given
    up). Manual: replaces the opener, or Conflict (being prepared, or already written in).
    ``now``: the clock claims, leases and retries are read on (tests; default the real one)."""
    claim = await _claim(fable, caller, day, manual=manual, now=now or datetime.now(UTC))
    if claim is None:
        return None
    renewing = asyncio.get_running_loop().create_task(_renew(fable, claim), name=f"fable-prep-lease-{claim.row_id}")
    try:
        async with fable.db.reading() as session:
            prefs, zone = await journal_clock(session, caller)
            gathered = await gather(session, caller, prep_day(caller.user_id, day, zone, prefs))
            (model,) = await read_settings(session, caller, DEFAULT_MODEL)
            about = await profile_prompt(session, caller)
        text, source = await _write(fable, caller, day, gathered, model, about)
        stored = await _store(fable, caller, claim, text, source, gathered)
    except BaseException as e:
        await _fail(fable, claim, e)
        raise
    finally:
        renewing.cancel()
    if stored is None and manual:
        raise Conflict(f"the journal of {day.isoformat()} was taken over by another prep while this one took "
                       "longer than its lease", day=day.isoformat())
    return stored


async def _claim(fable: Runtime, caller: Caller, day: date, *, manual: bool, now: datetime) -> Claim | None:
    async with fable.db.transaction() as session:
        row = await open_day(session, caller, day)
        row = (await session.execute(select(JournalDay).where(JournalDay.id == row.id).with_for_update()
                                     .execution_options(populate_existing=True))).scalar_one()
        busy = row.prep_state == "preparing" and row.lease_until is not None and row.lease_until > now
        wrote = await _has_written(session, row.conversation_id)
        if manual and busy:
            raise Conflict(f"the journal of {day.isoformat()} is being prepared right now", day=day.isoformat())
        if manual and wrote:
            raise Conflict(f"you have already written in the journal of {day.isoformat()}; its morning note "
                           "stays as it is", day=day.isoformat())
        if not manual:
            if busy or not claimable(row, now):
                return None
            if wrote:
                row.prep_state = "skipped"
                return None
            if row.prep_state == "preparing" and row.attempts >= MAX_ATTEMPTS:  # its last attempt died too
                row.prep_state, row.lease_until, row.error = "failed", None, _gave_up(DIED)
                return None
        row.attempts += 1
        row.prep_state, row.claimed_at, row.lease_until = "preparing", now, now + LEASE
        row.retry_at, row.error = None, None
        return Claim(row.id, row.attempts, now)


def claimable(row: JournalDay, now: datetime) -> bool:
    """Whether the job may claim ``row`` at ``now``: new, given back, its claim's lease over, or
    failed and due again."""
    if row.prep_state == "none":
        return True
    if row.prep_state == "preparing":
        return row.lease_until is None or row.lease_until <= now
    return row.prep_state == "failed" and row.retry_at is not None and row.retry_at <= now


def _gave_up(said: str) -> str:
    return f"gave up after {MAX_ATTEMPTS} attempts; the last: {said}"


async def _renew(fable: Runtime, claim: Claim) -> None:
    """Renew ``claim``'s lease every :data:`RENEW` while the prep works (on the clock it was
    claimed on); a renewal the database refuses is logged and tried again at the next."""
    started = clock.monotonic()
    while True:
        await asyncio.sleep(RENEW.total_seconds())
        until = claim.at + timedelta(seconds=clock.monotonic() - started) + LEASE
        try:
            async with fable.db.transaction() as session:
                await session.execute(update(JournalDay).where(*_held(claim)).values(lease_until=until))
        except FableError as e:
            _log.info("could not renew the claim on journal day %s: %s", claim.row_id, e.message)


def _held(claim: Claim) -> tuple[Any, ...]:
    """The row is still held by ``claim``: nobody took it over."""
    return (JournalDay.id == claim.row_id, JournalDay.prep_state == "preparing",
            JournalDay.attempts == claim.attempt)


async def _has_written(session: AsyncSession, conversation_id: int) -> bool:
    return bool(await session.scalar(select(exists().where(
        Message.conversation_id == conversation_id, Message.role == "user"))))


async def _write(fable: Runtime, caller: Caller, day: date, gathered: Gathered, model: str | None,
                 about: str | None = None) -> tuple[str, str]:
    """The opener's text and whether the model (``model``) or the sections (``structured``) wrote
    it; ``about`` is the user's profile, so that the note speaks to them."""
    assistant = fable.part(ASSISTANT)
    if assistant is None or isinstance(assistant.provider, NoProvider) or not gathered.parts:
        return structured_opener(day, gathered), "structured"
    system = _PROMPT.format(who=caller.username or "the user", day=f"{day:%A} {day.day} {day:%B %Y}")
    if about:
        system += f"\n\nAbout {caller.username or 'the user'} (their profile):\n{about}"
    data = json.dumps(gathered.as_json(), ensure_ascii=False, default=str)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": data}]
    try:
        with background():  # prepared ahead (the catch-up at start): behind what a user waits for
            text = (await assistant.model(caller, model).complete(messages, max_tokens=OPENER_TOKENS)).strip()
    except FableError as e:
        _log.warning("the model could not write the morning note of user %s (%s); writing it from the sections",
                     caller.user_id, e.message)
        text = ""
    why = ungrounded(text, f"{system}\n{data}") if text else ""
    if why:  # invented amounts and dates, JSON, instructions: the sections say it instead
        _log.warning("the morning note of user %s was not the model's: %s", caller.user_id, why)
    return (text, "model") if text and not why else (structured_opener(day, gathered), "structured")


async def _store(fable: Runtime, caller: Caller, claim: Claim, text: str, source: str,
                 gathered: Gathered) -> DayView | None:
    """Store the opener and mark the day done; None (nothing stored) when the claim was taken over."""
    async with fable.db.transaction() as session:
        row = (await session.execute(select(JournalDay).where(JournalDay.id == claim.row_id).with_for_update()
                                     .execution_options(populate_existing=True))).scalar_one()
        if (row.prep_state, row.attempts) != ("preparing", claim.attempt):  # taken over: its lease ran out
            _log.warning("the prep of journal day %s was taken over; its opener is not stored", claim.row_id)
            return None
        if await _has_written(session, row.conversation_id):  # the user wrote while it was being prepared
            row.prep_state = "skipped"
            await session.flush()
            return await day_view(session, row)
        if row.opener_message_id is not None:
            await session.execute(delete(Message).where(Message.id == row.opener_message_id))
        row.opener_message_id = (await session.execute(insert(Message).values(
            conversation_id=row.conversation_id, user_id=caller.user_id, role="assistant", content=text,
            status="done").returning(Message.id))).scalar_one()
        row.prep_state, row.prepared_at, row.opener_source = "done", func.now(), source
        row.sections, row.error, row.lease_until = [s.name for s, _ in gathered.parts], None, None
        await session.execute(update(Conversation).where(Conversation.id == row.conversation_id)
                              .values(updated_at=func.now()))
        await session.flush()
        return await day_view(session, row)


async def _fail(fable: Runtime, claim: Claim, error: BaseException) -> None:
    """A failed prep is ``failed``, with why and when to try again (none after the last attempt);
    one cancelled (Fable stopping) gives its claim back, so that the job's next run takes it up.
    A claim taken over meanwhile is the new holder's: nothing is written."""
    said = error.message if isinstance(error, FableError) else f"{type(error).__name__}: the prep failed"
    values: dict[str, Any] = {"prep_state": "none", "lease_until": None}
    if not isinstance(error, asyncio.CancelledError):
        last = claim.attempt >= MAX_ATTEMPTS
        values.update(prep_state="failed", error=_gave_up(said) if last else said,
                      retry_at=None if last else claim.at + BACKOFF[claim.attempt - 1])
    try:
        async with fable.db.transaction() as session:
            await session.execute(update(JournalDay).where(*_held(claim)).values(**values))
    except FableError:
        _log.warning("could not mark journal day %s failed", claim.row_id, exc_info=True)


@tool(group="journal", title="Prepare a journal day", scope="write", transaction="phases",
      route=Route("POST", "/journal/prepare"))
async def prepare_journal(ctx: Context, day: Day = None) -> DayView:
    """Write a day's morning note now; it replaces the note until you write in that day."""
    async with ctx.reading() as session:
        today, zone = await today_of(session, ctx.caller)
    check_day(day or today, today, zone)
    done = await prepare(ctx.fable, ctx.caller, day or today, manual=True)
    assert done is not None  # a manual prep prepares or raises
    return done
