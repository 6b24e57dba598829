"""Web Push delivery, off every request path: the ``send_pushes`` job.

A notification is committed ``pending``; its transaction signals
:data:`~fable_core.people.notifications.notify.CHANNEL`, which wakes this job in every process that
runs jobs (and the job also runs every :data:`SWEEP_SECONDS` for whatever a lost connection
missed). A run claims pending notifications (``FOR UPDATE SKIP LOCKED``, marked ``sending`` in
the same statement and committed: no transaction stays open while a push service thinks),
sends each to its user's subscribed devices, and records what happened:

- ``sent`` when a device's push service took it (2xx); the device's failure count restarts;
- a 404 or 410 means the subscription is gone (RFC 8030): its row is deleted;
- any other answer, a timeout, a refused address: the device's ``failures`` grow, and after
  :data:`MAX_FAILURES` in a row the subscription is deleted; the notification is ``failed``
  when no device took it (pushes are not retried: the inbox keeps it);
- ``skipped``: no device subscribed, the user's ``notifications`` setting does not push that
  kind, or it waited longer than :data:`MAX_AGE` (a server that was down a day does not buzz
  phones with yesterday).

**Nobody stalls anybody.** Sends run concurrently, at most :data:`CONCURRENCY` at once and
each bounded by ``timeout`` seconds (connect, send, answer). One user's notifications are
delivered in order by one task, and a run claims only for users with none in flight, so a user
whose push service hangs delays only their own next push, by at most the timeout.
A claim left ``sending`` by a process that died is handed back after :data:`STALE_AFTER`.

The message is encrypted for the device (RFC 8291, aes128gcm: pywebpush's ``WebPusher.encode``,
which uses http_ece) and signed with the instance's VAPID key (RFC 8292: py_vapid, as pywebpush
does). It is sent by :func:`fable_core.infra.ssrf.post`, not pywebpush's own HTTP clients: the
endpoint is a user-given URL, so the connection must go to the address the guard checked, and
asyncio's timeout bounds a send completely where a thread running ``requests`` could not be
cancelled.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from py_vapid import Vapid02
from sqlalchemy import Row, and_, any_, delete, func, or_, select, update
from sqlalchemy.dialects.postgresql import array

from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.db.models import Notification, PushSubscription
from fable_core.errors import FableError
from fable_core.infra import ssrf
from fable_core.people.notifications.notify import CHANNEL
from fable_core.people.notifications.preferences import NOTIFICATIONS
from fable_core.people.notifications.vapid import VapidKeys, vapid_keys
from fable_core.tools.access import of_user
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import job
from fable_core.tools.preferences import read_setting

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["CONCURRENCY", "MAX_AGE", "MAX_FAILURES", "STALE_AFTER", "PushSender", "message", "send_pushes"]

CONCURRENCY = 16  # users whose pushes are in flight at once
MAX_FAILURES = 10  # failed sends in a row after which a subscription is dropped
MAX_AGE = timedelta(days=1)  # older notifications are not pushed (also the TTL push services keep them)
STALE_AFTER = timedelta(minutes=5)
SWEEP_SECONDS = 30.0
TIMEOUT = 10.0
_POLL = 0.5  # while sends are in flight, how often a run looks for newly pending notifications
_log = logging.getLogger(__name__)

Outcome = Literal["sent", "gone", "failed"]


@job(every=SWEEP_SECONDS, wake=CHANNEL)
async def send_pushes(fable: Runtime) -> None:
    """Push every pending notification to its user's devices."""
    await PushSender(fable.db, fable.settings).run()


def message(kind: str, title: str, body: str, data: dict[str, Any] | None, notification_id: int) -> dict[str, str]:
    """What a device is sent: title, body, the same-origin path of what it is about, and a tag
    (a newer message with the same tag replaces the older one on the device)."""
    ref = _ref(data)
    url = f"/{ref[0]}/{ref[1]}" if ref else "/"
    return {"title": title, "body": body, "url": url,
            "tag": f"fable-{kind}-{ref[1]}" if ref else f"fable-{notification_id}"}


_LINKS = (("conversation_id", "chat"), ("note_id", "notes"), ("project_id", "projects"))


def _ref(data: dict[str, Any] | None) -> tuple[str, int] | None:
    for key, path in _LINKS:
        value = (data or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return path, value
    return None


@dataclass(frozen=True, slots=True)
class _Device:
    id: int
    endpoint: str
    p256dh: str
    auth: str


class PushSender:
    """One run of delivery (module docstring); :meth:`run` returns when nothing is pending."""

    def __init__(self, db: Database, settings: Settings, *, timeout: float = TIMEOUT,
                 concurrency: int = CONCURRENCY) -> None:
        self.db = db
        self.settings = settings
        self.timeout = timeout
        self.concurrency = concurrency
        self._keys: VapidKeys | None = None

    async def run(self) -> None:
        await self._requeue_stale()
        inflight: dict[asyncio.Task[None], int] = {}
        try:
            while True:
                free = self.concurrency - len(inflight)
                claimed = await self._claim(free, set(inflight.values())) if free > 0 else []
                for user_id, rows in _by_user(claimed).items():
                    inflight[asyncio.create_task(self._deliver_all(rows))] = user_id
                if not inflight:
                    return
                done, _ = await asyncio.wait(inflight, timeout=_POLL, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    inflight.pop(task)
        finally:
            for task in inflight:
                task.cancel()
            await asyncio.gather(*inflight, return_exceptions=True)

    async def _requeue_stale(self) -> None:
        async with self.db.transaction() as session:
            await session.execute(update(Notification).where(
                Notification.push_state == "sending", Notification.push_claimed_at < func.now() - STALE_AFTER)
                .values(push_state="pending", push_claimed_at=None))

    async def _claim(self, limit: int, busy: set[int]) -> list[Row[Any]]:
        """Up to ``limit`` pending notifications of users with none in flight, marked ``sending``."""
        pending = (select(Notification.id).where(Notification.push_state == "pending")
                   .order_by(Notification.id).limit(limit).with_for_update(skip_locked=True))
        if busy:
            pending = pending.where(~of_user(Notification, any_(array(sorted(busy)))))
        async with self.db.transaction() as session:
            result = await session.execute(
                update(Notification).where(Notification.id.in_(pending.scalar_subquery()))
                .values(push_state="sending", push_claimed_at=func.now())
                .returning(Notification.id, Notification.user_id, Notification.kind, Notification.title,
                           Notification.body, Notification.data, Notification.created_at))
            return sorted(result.all(), key=lambda row: row.id)

    async def _deliver_all(self, rows: list[Row[Any]]) -> None:
        for row in rows:
            try:
                await self._deliver(row)
            except (FableError, OSError):
                _log.warning("pushing notification %s failed", row.id, exc_info=True)
                await self._finish(row.id, "failed", {})

    async def _deliver(self, row: Row[Any]) -> None:
        devices, wanted = await self._devices(row)
        if not devices or not wanted or datetime.now(row.created_at.tzinfo) - row.created_at > MAX_AGE:
            await self._finish(row.id, "skipped", {})
            return
        keys = await self._vapid()
        payload = json.dumps(message(row.kind, row.title, row.body, row.data, row.id)).encode()
        outcomes = await asyncio.gather(*(self._send(device, payload, keys) for device in devices))
        results = {device.id: outcome for device, outcome in zip(devices, outcomes, strict=True)}
        await self._finish(row.id, "sent" if "sent" in outcomes else "failed", results)

    async def _devices(self, row: Row[Any]) -> tuple[list[_Device], bool]:
        async with self.db.reading() as session:
            prefs = await read_setting(session, Caller(user_id=row.user_id), NOTIFICATIONS)
            found = (await session.execute(
                select(PushSubscription.id, PushSubscription.endpoint, PushSubscription.p256dh, PushSubscription.auth)
                .where(of_user(PushSubscription, row.user_id)).order_by(PushSubscription.id))).all()
        return [_Device(*device) for device in found], prefs.pushes(row.kind)

    async def _vapid(self) -> VapidKeys:
        if self._keys is None:
            self._keys = await vapid_keys(self.db, self.settings)
        return self._keys

    async def _send(self, device: _Device, payload: bytes, keys: VapidKeys) -> Outcome:
        try:
            # off the loop: the first one imports pywebpush (0.2 s), each one does ECDH and AES
            body, headers = await asyncio.to_thread(_encrypted, device, payload, keys, self._contact())
            posted = await ssrf.post(device.endpoint, body, headers, timeout=self.timeout,
                                     allow=self.settings.fable_push_allow_hosts)
        except FableError as e:  # Blocked, Unavailable (timeouts included)
            _log.info("push to device %s failed: %s", device.id, e.message)
            return "failed"
        if 200 <= posted.status < 300:
            return "sent"
        if posted.status in (404, 410):
            return "gone"
        _log.info("push service of device %s answered %s: %s", device.id, posted.status, posted.text[:200])
        return "failed"

    def _contact(self) -> str:
        """The VAPID ``sub``: who push services may contact about our messages."""
        base = self.settings.fable_base_url or ""
        return base.rstrip("/") if base.startswith("https://") else f"mailto:{self.settings.smtp_from}"

    async def _finish(self, notification_id: int, state: str, results: dict[int, Outcome]) -> None:
        by_outcome: dict[Outcome, list[int]] = defaultdict(list)
        for device_id, outcome in results.items():
            by_outcome[outcome].append(device_id)
        async with self.db.transaction() as session:
            await session.execute(update(Notification).where(Notification.id == notification_id)
                                  .values(push_state=state))
            if by_outcome["sent"]:
                await session.execute(update(PushSubscription).where(PushSubscription.id.in_(by_outcome["sent"]))
                                      .values(failures=0, last_sent_at=func.now()))
            if by_outcome["failed"]:
                await session.execute(update(PushSubscription).where(PushSubscription.id.in_(by_outcome["failed"]))
                                      .values(failures=PushSubscription.failures + 1))
            gone, failed = by_outcome["gone"], by_outcome["failed"]
            if gone or failed:
                await session.execute(delete(PushSubscription).where(or_(
                    PushSubscription.id.in_(gone),
                    and_(PushSubscription.id.in_(failed), PushSubscription.failures >= MAX_FAILURES))))


def _by_user(rows: list[Row[Any]]) -> dict[int, list[Row[Any]]]:
    grouped: dict[int, list[Row[Any]]] = defaultdict(list)
    for row in rows:
        grouped[row.user_id].append(row)
    return grouped


def _encrypted(device: _Device, payload: bytes, keys: VapidKeys, contact: str) -> tuple[bytes, dict[str, str]]:
    """The aes128gcm body for ``device`` and the request's headers (VAPID included)."""
    from pywebpush import WebPusher  # here: it imports requests and aiohttp, 0.2 s of every start

    pusher = WebPusher({"endpoint": device.endpoint, "keys": {"p256dh": device.p256dh, "auth": device.auth}})
    body: bytes = pusher.encode(payload, "aes128gcm")["body"]
    parts = urlsplit(device.endpoint)
    claims = {"aud": f"{parts.scheme}://{parts.netloc}", "sub": contact, "exp": int(time.time()) + 12 * 3600}
    headers: dict[str, str] = Vapid02(keys.private).sign(claims)
    return body, {**headers, "TTL": str(int(MAX_AGE.total_seconds())), "Content-Encoding": "aes128gcm",
                  "Content-Type": "application/octet-stream", "Urgency": "normal"}
