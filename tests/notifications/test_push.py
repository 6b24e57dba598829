"""Web Push end to end against a push service in tests/ (support.push_service): subscriptions
checked field by field, the real encrypted message decrypted with the device's keys, VAPID
verified, 404/410 dropping a subscription, a hanging service delaying nobody else, claims that
never send twice, and the wake after a commit."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from support.pace import scaled
from support.push_service import PushService
from support.servers import serve

from fable_core.db.models import InstanceSetting, Notification, PushSubscription, Setting
from fable_core.errors import Conflict, InvalidInput
from fable_core.people.notifications.push import MAX_DEVICES
from fable_core.people.notifications.sender import MAX_FAILURES, PushSender
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import JOBS, Scheduler, run_job


@pytest.fixture
async def service() -> AsyncIterator[PushService]:
    push = PushService()
    async with serve(push.app()) as url:
        push.origin = url
        yield push
        push.release.set()


@pytest.fixture
def push_fable(fable: Fable, service: PushService) -> Fable:
    """The session's Fable (same database) configured to let the test push service through."""
    host = urlsplit(service.origin).netloc
    return Fable(fable.settings.model_copy(update={"fable_push_allow_hosts": [host]}), fable.db)


async def _subscribe(fable: Fable, caller: Caller, service: PushService, token: str, answer: Any = 201) -> Any:
    device = service.device(token, answer)
    await fable.call("subscribe_push", {"endpoint": service.endpoint(device), "p256dh": device.p256dh,
                                        "auth": device.auth, "device": "test browser"}, caller)
    return device


async def _rows(fable: Fable, *columns: Any) -> list[tuple[Any, ...]]:
    async with fable.db.reading() as session:
        return [tuple(r) for r in await session.execute(select(*columns).order_by(columns[0]))]


def _sender(fable: Fable, **options: Any) -> PushSender:
    return PushSender(fable.db, fable.settings, **options)


async def test_a_notification_reaches_the_device_encrypted_for_it_and_signed_by_the_instance(
        push_fable: Fable, alice: Caller, service: PushService, tell: Any) -> None:
    await _subscribe(push_fable, alice, service, "phone")
    await tell(alice, "share", "bob shared the project Garden with you", body="as editor", data={"project_id": 7})
    await _sender(push_fable).run()

    [got] = service.received
    assert service.refused == []
    assert got.message == {"title": "bob shared the project Garden with you", "body": "as editor",
                           "url": "/projects/7", "tag": "fable-share-7"}
    public = (await push_fable.call("get_push_public_key", {}, alice))["public_key"]
    assert got.vapid_key == public  # signed by the key browsers subscribe with
    assert got.claims["aud"] == service.origin and got.claims["sub"].startswith("mailto:")
    assert int(got.headers["ttl"]) == 86400
    [(state,)] = await _rows(push_fable, Notification.push_state)
    assert state == "sent"
    [(failures, sent_at)] = await _rows(push_fable, PushSubscription.failures, PushSubscription.last_sent_at)
    assert failures == 0 and sent_at is not None


async def test_the_vapid_key_pair_is_made_once_and_its_private_half_is_stored_encrypted(
        push_fable: Fable, alice: Caller, service: PushService) -> None:
    first = (await push_fable.call("get_push_public_key", {}, alice))["public_key"]
    assert (await push_fable.call("get_push_public_key", {}, alice))["public_key"] == first
    [(stored,)] = await _rows(push_fable, InstanceSetting.value)
    assert stored["public"] == first and stored["private"].startswith("gAAAA")  # a Fernet token
    # another secret cannot decrypt it: a new pair, and the old key's subscriptions are dropped
    await _subscribe(push_fable, alice, service, "phone")
    rekeyed = Fable(push_fable.settings.model_copy(update={"fable_secret_key": "another-secret"}), push_fable.db)
    second = (await rekeyed.call("get_push_public_key", {}, alice))["public_key"]
    assert second != first
    assert await _rows(push_fable, PushSubscription.id) == []


async def test_subscribing_an_endpoint_again_updates_it_and_unsubscribing_removes_it(
        push_fable: Fable, alice: Caller, bob: Caller, service: PushService) -> None:
    device = await _subscribe(push_fable, alice, service, "phone")
    renewed = service.device("phone")  # new keys, same endpoint
    result = await push_fable.call("subscribe_push", {"endpoint": service.endpoint(device), "p256dh": renewed.p256dh,
                                                      "auth": renewed.auth}, alice)
    assert result == {"devices": 1}
    assert await _rows(push_fable, PushSubscription.p256dh) == [(renewed.p256dh,)]
    assert (await push_fable.call("unsubscribe_push", {"endpoint": service.endpoint(device)}, bob)) == {
        "unsubscribed": False}  # not bob's: as if it did not exist
    assert (await push_fable.call("unsubscribe_push", {"endpoint": service.endpoint(device)}, alice)) == {
        "unsubscribed": True}
    assert await _rows(push_fable, PushSubscription.id) == []


async def test_a_user_has_at_most_twenty_devices(push_fable: Fable, alice: Caller, service: PushService) -> None:
    for n in range(MAX_DEVICES):
        await _subscribe(push_fable, alice, service, f"d{n}")
    with pytest.raises(Conflict, match="at most 20 devices"):
        await _subscribe(push_fable, alice, service, "one-more")
    assert len(await _rows(push_fable, PushSubscription.id)) == MAX_DEVICES


_KEY = "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM"
_AUTH = "tBHItJI5svbpez7KI4CCXg"


@pytest.mark.parametrize(("change", "field"), [
    ({"endpoint": "http://push.example.com/x"}, "https"),
    ({"endpoint": "ftp://push.example.com/x"}, "https"),
    ({"endpoint": "https://10.0.0.7/x"}, "not public"),
    ({"endpoint": "https://[::1]:8443/x"}, "not public"),
    ({"endpoint": "https://169.254.169.254/latest"}, "not public"),
    ({"endpoint": "not a url"}, "https"),
    ({"endpoint": "https://push.example.com/" + "x" * 2000}, "endpoint"),
    ({"p256dh": _KEY[:-4]}, "p256dh"),
    ({"p256dh": "B" + "A" * 86}, "p256dh"),  # 65 bytes, not a point on the curve
    ({"p256dh": "!!!"}, "p256dh"),
    ({"auth": _AUTH[:-2]}, "auth"),
    ({"auth": ""}, "auth"),
    ({"device": "x" * 201}, "device"),
])
async def test_a_bad_subscription_is_refused_clearly_and_stores_nothing(
        push_fable: Fable, alice: Caller, change: dict[str, str], field: str) -> None:
    arguments = {"endpoint": "https://push.example.com/send/abc", "p256dh": _KEY, "auth": _AUTH} | change
    with pytest.raises(InvalidInput) as caught:
        await push_fable.call("subscribe_push", arguments, alice)
    assert field in str(caught.value.to_dict())
    assert await _rows(push_fable, PushSubscription.id) == []


async def test_a_well_formed_subscription_to_a_public_name_is_accepted(push_fable: Fable, alice: Caller) -> None:
    result = await push_fable.call("subscribe_push", {"endpoint": "https://push.example.com/send/abc",
                                                      "p256dh": _KEY, "auth": _AUTH}, alice)
    assert result == {"devices": 1}


@pytest.mark.parametrize("status", [404, 410])
async def test_a_gone_subscription_is_deleted(push_fable: Fable, alice: Caller, service: PushService, tell: Any,
                                              status: int) -> None:
    await _subscribe(push_fable, alice, service, "old", answer=status)
    kept = await _subscribe(push_fable, alice, service, "new")
    await tell(alice, "due", "Due today: a", data={"note_id": 1})
    await _sender(push_fable).run()
    assert await _rows(push_fable, PushSubscription.endpoint) == [(service.endpoint(kept),)]
    assert {r.token for r in service.received} == {"old", "new"}


async def test_failures_are_counted_and_a_device_failing_too_often_is_dropped(
        push_fable: Fable, alice: Caller, service: PushService, tell: Any) -> None:
    await _subscribe(push_fable, alice, service, "flaky", answer=500)
    await tell(alice, "due", "Due today: a")
    await _sender(push_fable).run()
    assert await _rows(push_fable, PushSubscription.failures) == [(1,)]
    assert await _rows(push_fable, Notification.push_state) == [("failed",)]
    async with push_fable.db.transaction() as session:
        await session.execute(update(PushSubscription).values(failures=MAX_FAILURES - 1))
    await tell(alice, "due", "Due today: b")
    await _sender(push_fable).run()
    assert await _rows(push_fable, PushSubscription.id) == []


async def test_a_name_that_resolves_to_a_private_address_is_refused_at_send_time(
        push_fable: Fable, alice: Caller, service: PushService, tell: Any) -> None:
    device = service.device("sneaky")
    port = urlsplit(service.origin).port
    await push_fable.call("subscribe_push", {"endpoint": f"https://localhost:{port}/push/sneaky",
                                             "p256dh": device.p256dh, "auth": device.auth}, alice)
    await tell(alice, "due", "Due today: a")
    await _sender(push_fable).run()
    assert service.received == [] and service.refused == []
    assert await _rows(push_fable, Notification.push_state) == [("failed",)]
    assert await _rows(push_fable, PushSubscription.failures) == [(1,)]


async def test_a_push_service_that_hangs_delays_nobody_else(
        push_fable: Fable, alice: Caller, bob: Caller, service: PushService, tell: Any) -> None:
    await _subscribe(push_fable, alice, service, "tarpit", answer="hang")
    await _subscribe(push_fable, bob, service, "prompt")
    await tell(alice, "due", "Due today: a")
    await tell(alice, "due", "Due today: b")
    await tell(bob, "due", "Due today: c")
    started = time.monotonic()
    run = asyncio.create_task(_sender(push_fable, timeout=2.5).run())
    await asyncio.wait_for(service.arrived.wait(), 2.0)  # well before alice's send times out
    await asyncio.wait_for(service.hanging.wait(), 2.0)
    assert [r.token for r in service.received] == ["prompt"]
    assert not run.done()  # bob's went while alice's hung (her two take 5 s)
    await asyncio.wait_for(run, 10)
    # alice's two waited their turn behind her own hanging service, 2.5 s each, and no longer
    assert 5 <= time.monotonic() - started < 8
    states = await _rows(push_fable, Notification.id, Notification.push_state)
    assert [state for _, state in states] == ["failed", "failed", "sent"]
    assert sorted(await _rows(push_fable, PushSubscription.failures)) == [(0,), (2,)]


async def test_two_senders_at_once_send_each_notification_once(
        push_fable: Fable, alice: Caller, bob: Caller, service: PushService, tell: Any) -> None:
    await _subscribe(push_fable, alice, service, "a")
    await _subscribe(push_fable, bob, service, "b")
    for n in range(6):
        await tell(alice if n % 2 else bob, "due", f"Due today: {n}")
    await asyncio.gather(_sender(push_fable).run(), _sender(push_fable).run())
    assert sorted(r.message["title"] for r in service.received) == [f"Due today: {n}" for n in range(6)]
    assert {state for (state,) in await _rows(push_fable, Notification.push_state)} == {"sent"}


async def test_preferences_decide_what_is_pushed(
        push_fable: Fable, alice: Caller, service: PushService, tell: Any, fable: Fable) -> None:
    await _subscribe(push_fable, alice, service, "phone")
    await _set(fable, alice, {"push": True, "push_kinds": ["share"]})
    await tell(alice, "due", "Due today: a")
    await tell(alice, "share", "bob shared the note Plans with you", data={"note_id": 4})
    await _sender(push_fable).run()
    assert [r.message["url"] for r in service.received] == ["/notes/4"]
    await _set(fable, alice, {"push": False})
    await tell(alice, "share", "bob shared the note Other with you", data={"note_id": 5})
    await _sender(push_fable).run()
    assert len(service.received) == 1
    states = [state for _, state in await _rows(push_fable, Notification.id, Notification.push_state)]
    assert states == ["skipped", "sent", "skipped"]


async def _set(fable: Fable, caller: Caller, value: dict[str, Any]) -> None:
    async with fable.db.transaction() as session:
        await session.execute(insert(Setting).values(user_id=caller.user_id, key="notifications", value=value)
                              .on_conflict_do_update(index_elements=["user_id", "key"], set_={"value": value}))


async def test_nothing_is_pushed_without_a_device_and_old_claims_are_handed_back(
        push_fable: Fable, alice: Caller, service: PushService, tell: Any) -> None:
    await tell(alice, "due", "Due today: a")
    await _sender(push_fable).run()
    assert await _rows(push_fable, Notification.push_state) == [("skipped",)]
    await _subscribe(push_fable, alice, service, "phone")
    await tell(alice, "due", "Due today: b")
    async with push_fable.db.transaction() as session:  # a process claimed it and died
        await session.execute(update(Notification).where(Notification.push_state == "pending").values(
            push_state="sending", push_claimed_at=func.now() - timedelta(minutes=6)))
    await _sender(push_fable).run()
    assert [r.message["title"] for r in service.received] == ["Due today: b"]


async def test_a_commit_wakes_the_sender_of_a_process_that_runs_jobs(
        push_fable: Fable, alice: Caller, service: PushService, tell: Any) -> None:
    await _subscribe(push_fable, alice, service, "phone")
    scheduler = Scheduler(push_fable, {"send_pushes": replace(JOBS["send_pushes"], every=3600)})
    scheduler.start()
    try:
        await asyncio.wait_for(scheduler.listener.listening.wait(), scaled(10))
        await scheduler.idle()  # the run every (re)connect makes
        await tell(alice, "answer", "The assistant answered in Trip", data={"conversation_id": 3})
        await asyncio.wait_for(service.arrived.wait(), scaled(10))  # no clock: the NOTIFY of the commit
        assert [r.message["url"] for r in service.received] == ["/chat/3"]
    finally:
        await scheduler.close()


async def test_the_push_job_runs_once_at_a_time(push_fable: Fable, alice: Caller, service: PushService,
                                                 tell: Any) -> None:
    await _subscribe(push_fable, alice, service, "phone", answer="hang")
    await tell(alice, "due", "Due today: a")
    first = asyncio.create_task(run_job(push_fable, "send_pushes"))
    await asyncio.wait_for(service.hanging.wait(), scaled(5))
    assert await run_job(push_fable, "send_pushes") is False  # the lock is held by the first run
    service.release.set()
    assert await first is True
