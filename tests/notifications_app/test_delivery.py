"""Notifications in process (contract §15, §17): one notify() reaches every target exactly once —
the dashboard's live list, Web Push (over TLS to a strict local push service that checks VAPID
and decrypts; 127.0.0.1 is in notifications.push_private_hosts, the `push` fixture's CA
trusted), a channel, an Apprise json:// URL; a failing or hanging target delays none of the
others and, after its quick attempts, waits to be tried again; a target that was down gets the
notification once it is back, within this run or the next; one that stays down for 24 h (the
clock moved, not slept) ends `failed`; a refusal fails at once; a 410 drops the subscription;
`notifications.events` filters."""

from __future__ import annotations

import asyncio
import socket
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from core import config
from harness.fakes.apprise_target import JsonSink
from harness.fakes.push_endpoint import PushEndpoint, with_private_hosts
from harness.runtime import running, settings_file
from notifications_app import webpush
from notifications_app.models import Delivery, Notification, PushSubscription
from svcproject.parts import Parts
from tests.notifications_app.support import StubChannel, adeliveries, until

pytestmark = pytest.mark.django_db(transaction=True)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@sync_to_async
def subscribe(subscription: dict[str, Any]) -> int:
    """As POST /api/push/subscriptions stores it (the API is tested in test_api.py)."""
    row = PushSubscription.objects.create(
        endpoint=subscription["endpoint"], **subscription["keys"], user_agent="test browser"
    )
    return row.pk


def quick(runtime: Parts, timeout_s: float = 0.5, retry_s: float = 60.0) -> None:
    """Short attempt limits, so a hanging target's three attempts take about a second; the
    later tries `retry_s` apart (by default after the test)."""
    runtime.notifier.attempt_timeout_s = timeout_s
    runtime.notifier.backoff_s = (0.05, 0.05)
    runtime.notifier.retry_first_s = runtime.notifier.retry_max_s = retry_s


async def notify(runtime: Parts, event: str = "permission_requested") -> dict[str, Any]:
    made = await runtime.notifier.notify(
        event,
        session_id="0f0e0d0c-0000-4000-8000-000000000001",
        agent="fake",
        title="fake asks permission: rm -rf build",
        body="fake in repo waits for your answer",
    )
    assert made is not None
    return made


def dashboard_socket(parts: Parts) -> WebsocketCommunicator:
    from harness.runtime import scoped
    from svcproject.asgi import routed

    token = config.current_auth().owner_token
    return WebsocketCommunicator(scoped(routed, parts), f"/ws/notifications?token={token}")


async def test_one_notification_reaches_every_target_exactly_once(
    push: PushEndpoint, sink: JsonSink
) -> None:
    phone = await subscribe(push.subscribe("phone"))
    channel = StubChannel("telegram")
    with settings_file(with_private_hosts({"notifications": {"urls": [sink.apprise_url("hook")]}})):
        async with running() as rt:
            rt.notifier.channel_notifiers = lambda: [channel]
            ws = dashboard_socket(rt)
            assert (await ws.connect())[0]
            assert await ws.receive_json_from(timeout=10) == []
            made = await notify(rt)
            await rt.notifier.wait_idle()
            frames = []
            while not frames or frames[-1][0]["deliveries"][0]["status"] != "sent":
                frames.append(await ws.receive_json_from(timeout=10))
            await ws.disconnect()
            await asyncio.sleep(0.3)  # nothing more comes later

    rows = await adeliveries(made["id"])
    assert set(rows) == {"dashboard", f"webpush:{phone}", "channel:telegram", "apprise:0"}
    assert all(r["status"] == "sent" and r["attempts"] == 1 for r in rows.values()), rows
    shown = frames[-1][0]
    assert shown["id"] == made["id"] and shown["event"] == "permission_requested"
    assert {d["target"] for d in shown["deliveries"]} == set(rows)

    [payload] = push.payloads("phone")  # decrypted with the browser's keys, VAPID verified
    assert not push.rejected
    assert payload["title"] == "fake asks permission: rm -rf build"
    assert payload["url"].endswith("/#session=0f0e0d0c-0000-4000-8000-000000000001")
    assert payload["url"].startswith(f"http://127.0.0.1:{config.svc_port()}/")
    [received] = push.received
    assert received.vapid_key == await sync_to_async(webpush.public_key)()
    assert received.claims["aud"] == push.url and received.claims["sub"].startswith("mailto:")

    assert [t for t, _, _ in channel.sent] == ["fake asks permission: rm -rf build"]
    [body] = sink.bodies("hook")
    assert body["title"] == "fake asks permission: rm -rf build"
    assert "waits for your answer" in body["message"] and "#session=" in body["message"]


async def test_a_hanging_or_failing_target_delays_none_of_the_others(
    push: PushEndpoint, sink: JsonSink
) -> None:
    phone = await subscribe(push.subscribe("phone"))
    stuck = await subscribe(push.subscribe("stuck", slow_s=30))
    broken = await subscribe(push.subscribe("broken", answer=500))
    urls = [sink.apprise_url("ok"), f"json://127.0.0.1:{closed_port()}/nobody"]
    channel = StubChannel("telegram")
    with settings_file(with_private_hosts({"notifications": {"urls": urls}})):
        async with running() as rt:
            quick(rt, timeout_s=1.0)
            rt.notifier.channel_notifiers = lambda: [channel, StubChannel("slack", hang=True)]
            made = await notify(rt)

            async def the_others_sent() -> bool:
                rows = await adeliveries(made["id"])
                fine = ("dashboard", f"webpush:{phone}", "channel:telegram", "apprise:0")
                return all(rows[k]["status"] == "sent" for k in fine)

            await until(the_others_sent, limit=5)
            rows = await adeliveries(made["id"])
            assert rows[f"webpush:{stuck}"]["status"] == "pending"  # still on its first attempt
            assert rows["channel:slack"]["status"] == "pending"
            await rt.notifier.wait_idle()

    rows = await adeliveries(made["id"])
    # Could not be reached: each waits to be tried again (contract §17), saying why.
    assert rows[f"webpush:{stuck}"] == {
        **rows[f"webpush:{stuck}"],
        "status": "pending",
        "attempts": 3,
        "error": "no answer within 1 s",
    }
    assert all(r["next_at"] for r in rows.values() if r["status"] == "pending")
    assert rows["channel:slack"]["status"] == "pending" and rows["channel:slack"]["attempts"] == 3
    assert rows[f"webpush:{broken}"]["status"] == "pending"
    assert rows[f"webpush:{broken}"]["error"] == "the push service answered 500"
    assert rows["apprise:1"]["status"] == "pending" and rows["apprise:1"]["attempts"] == 3
    assert "nobody" not in rows["apprise:1"]["error"]  # no URL paths in errors
    assert push.attempts == {"phone": 1, "stuck": 3, "broken": 3}
    assert len(push.payloads("phone")) == 1 and len(sink.bodies("ok")) == 1


async def test_a_410_removes_the_subscription_without_retrying(push: PushEndpoint) -> None:
    gone = await subscribe(push.subscribe("gone", answer=410))
    kept = await subscribe(push.subscribe("kept"))
    async with running() as rt:
        # Nothing here hangs: a short attempt limit only timed out the first push (its keys
        # and TLS) on a loaded CI machine, and the 410 came on a second attempt.
        quick(rt, timeout_s=10.0)
        made = await notify(rt)
        await rt.notifier.wait_idle()
        again = await notify(rt, "turn_ended")
        await rt.notifier.wait_idle()
    rows = await adeliveries(made["id"])
    assert rows[f"webpush:{gone}"]["status"] == "failed"
    assert rows[f"webpush:{gone}"]["attempts"] == 1 and "410" in rows[f"webpush:{gone}"]["error"]
    assert push.attempts["gone"] == 1
    remaining = await sync_to_async(lambda: list(PushSubscription.objects.values_list("pk")))()
    assert remaining == [(kept,)]
    assert set(await adeliveries(again["id"])) == {"dashboard", f"webpush:{kept}"}


async def test_a_target_that_was_down_gets_the_notification_once_it_is_back(
    sink: JsonSink,
) -> None:
    """The Apprise target's port is closed when the notification is made: after its quick
    attempts the delivery waits (pending, its next try set); the target comes up where it was
    expected and gets the notification once, the row `sent`. Before contract §17 it ended
    `failed` after three attempts, never delivered."""
    port = closed_port()
    with settings_file({"notifications": {"urls": [f"json://127.0.0.1:{port}/back"]}}):
        async with running() as rt:
            quick(rt, retry_s=0.3)
            made = await notify(rt)
            await rt.notifier.wait_idle()
            waiting = (await adeliveries(made["id"]))["apprise:0"]
            assert waiting["status"] == "pending" and waiting["attempts"] == 3
            assert waiting["next_at"] and waiting["error"]
            up = JsonSink()
            up.port = port
            up.start()
            try:
                await until(lambda: up.bodies("back"), limit=15)
                await until(lambda: is_status(made["id"], "apprise:0", "sent"), limit=5)
                await asyncio.sleep(1.0)  # and nothing more comes
                assert len(up.bodies("back")) == 1
            finally:
                up.stop()
    row = (await adeliveries(made["id"]))["apprise:0"]
    assert row["status"] == "sent" and row["attempts"] >= 4 and row["next_at"] is None


async def test_what_was_pending_when_svc_stopped_is_delivered_by_the_next_run_once(
    push: PushEndpoint, sink: JsonSink
) -> None:
    """A stop leaves waiting deliveries pending: the hook answering 500, and the push cut off
    mid-attempt. A run killed outright leaves a row with no attempt at all. The next run sends
    each of them once — and nothing that was sent already."""
    stuck = await subscribe(push.subscribe("stuck", slow_s=30))
    sink.failing.add("hook")
    with settings_file(with_private_hosts({"notifications": {"urls": [sink.apprise_url("hook")]}})):
        async with running() as rt:
            quick(rt)
            made = await notify(rt)
            await until(lambda: push.attempts.get("stuck") == 1, limit=5)
            await until(lambda: has_attempts(made["id"], "apprise:0", 3), limit=5)
        rows = await adeliveries(made["id"])
        assert rows[f"webpush:{stuck}"]["status"] == "pending"  # cut off, not failed
        assert rows["apprise:0"]["status"] == "pending"
        assert rows["dashboard"]["status"] == "sent"

        cut = await sync_to_async(_pending_leftover)()  # a run killed before its first attempt
        sink.failing.clear()
        push.browsers["stuck"].slow_s = 0  # it answers at once from now on
        async with running() as rt:
            await until(lambda: len(sink.bodies("hook")) == 2, limit=15)
            await until(lambda: push.payloads("stuck"), limit=15)
            await rt.notifier.wait_idle()
            await asyncio.sleep(0.5)
    assert [b["title"] for b in sink.bodies("hook")].count("left over") == 1
    assert len(sink.bodies("hook")) == 2 and len(push.payloads("stuck")) == 1
    assert (await adeliveries(cut))["apprise:0"]["status"] == "sent"
    after = await adeliveries(made["id"])
    assert {k: r["status"] for k, r in after.items()} == {
        "dashboard": "sent",
        f"webpush:{stuck}": "sent",
        "apprise:0": "sent",
    }
    assert after["dashboard"]["attempts"] == 1  # sent once, never again


async def test_a_delivery_that_cannot_reach_its_target_for_24_hours_fails_and_is_shown() -> None:
    """The target stays down; 24 h after the notification (the notifier's clock moved, not
    slept) its next try fails it for good, saying why; the API lists it failed."""
    settings = {"notifications": {"urls": [f"json://127.0.0.1:{closed_port()}/gone"]}}
    with settings_file(settings):
        async with running() as rt:
            quick(rt)
            made = await notify(rt)
            await rt.notifier.wait_idle()
            assert await is_status(made["id"], "apprise:0", "pending")
            later = timezone.now() + timedelta(hours=24, minutes=1)
            rt.notifier.clock = lambda: later
            rt.notifier.retry_first_s = rt.notifier.retry_max_s = 0.1
            await sync_to_async(_due_now)(made["id"])
            rt.notifier.wake()
            await until(lambda: is_status(made["id"], "apprise:0", "failed"), limit=10)
    listed = await sync_to_async(_api_notifications)()
    [shown] = [
        d
        for n in listed
        if n["id"] == made["id"]
        for d in n["deliveries"]
        if d["target"] == "apprise:0"
    ]
    assert shown["status"] == "failed" and shown["next_at"] is None
    assert shown["error"].startswith("not delivered within 24 h: ")
    assert shown["attempts"] == 4


@sync_to_async
def is_status(notification_id: str, target: str, status: str) -> bool:
    return Delivery.objects.get(notification_id=notification_id, target=target).status == status


@sync_to_async
def has_attempts(notification_id: str, target: str, attempts: int) -> bool:
    row = Delivery.objects.get(notification_id=notification_id, target=target)
    return row.status == "pending" and row.attempts == attempts


def _due_now(notification_id: str) -> None:
    """Its next try is now (it was set a minute after the last attempt)."""
    Delivery.objects.filter(notification_id=notification_id).update(next_at=timezone.now())


def _api_notifications() -> list[dict[str, Any]]:
    """GET /api/notifications as the owner."""
    from django.test import Client

    token = config.current_auth().owner_token
    answer = Client().get("/api/notifications", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code == 200, answer.content
    return answer.json()


def _pending_leftover() -> str:
    notification = Notification.objects.create(
        event="turn_ended", title="left over", body="", url="http://127.0.0.1/"
    )
    Delivery.objects.create(notification=notification, target="apprise:0")
    return str(notification.id)


async def test_notifications_events_narrows_what_is_sent(sink: JsonSink) -> None:
    settings = {"notifications": {"events": ["turn_ended"], "urls": [sink.apprise_url("x")]}}
    with settings_file(settings):
        async with running() as rt:
            assert await rt.notifier.notify("permission_requested", title="t", body="b") is None
            assert await rt.notifier.notify("turn_ended", title="t", body="b") is not None
            with pytest.raises(ValueError, match="unknown notification event"):
                await rt.notifier.notify("made_up", title="t", body="b")
            await rt.notifier.wait_idle()
    events = await sync_to_async(lambda: list(Notification.objects.values_list("event")))()
    assert events == [("turn_ended",)]
    assert [b["title"] for b in sink.bodies("x")] == ["t"]


async def test_a_bad_urls_entry_is_a_failed_delivery_never_a_crash_or_a_leak() -> None:
    secret = f"json://user:hunter2@127.0.0.1:{closed_port()}/p?token=abc123"
    settings = {"notifications": {"urls": [42, "nonsense://x", secret]}}
    with settings_file(settings):
        async with running() as rt:
            quick(rt)
            made = await notify(rt)
            await rt.notifier.wait_idle()
    rows = await adeliveries(made["id"])
    assert rows["dashboard"]["status"] == "sent"
    assert rows["apprise:0"] == {
        **rows["apprise:0"],
        "status": "failed",
        "attempts": 0,
        "error": "notifications.urls[0] must be an Apprise URL string",
    }
    assert rows["apprise:1"]["status"] == "failed" and rows["apprise:1"]["attempts"] == 1
    assert "not a URL Apprise knows" in rows["apprise:1"]["error"]
    assert rows["apprise:2"]["status"] == "pending"  # its port is closed: it waits
    stored = str(await sync_to_async(lambda: list(Delivery.objects.values_list()))())
    assert "hunter2" not in stored and "abc123" not in stored
