"""Notifications in process (contract §15): one notify() reaches every target exactly once — the
dashboard's live list, Web Push (decrypted and VAPID-checked by a strict local push service), a
channel, an Apprise json:// URL; a failing or hanging target delays none of the others and ends
`failed` after its bounded attempts; a 410 drops the subscription; a restart re-sends nothing;
`notifications.events` filters."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from notifications_app import webpush
from notifications_app.models import Delivery, Notification, PushSubscription
from svcproject import config
from svcproject.runtime import Runtime
from tests.fakes.apprise_target import JsonSink
from tests.fakes.push_endpoint import PushEndpoint
from tests.notifications_app.support import StubChannel, adeliveries, until
from tests.support.runtime import running, settings_file

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


def quick(runtime: Runtime, timeout_s: float = 0.5) -> None:
    """Short attempt limits, so a hanging target's three attempts take about a second."""
    runtime.notifier.attempt_timeout_s = timeout_s
    runtime.notifier.backoff_s = (0.05, 0.05)


async def notify(runtime: Runtime, event: str = "permission_requested") -> dict[str, Any]:
    made = await runtime.notifier.notify(
        event, session_id="0f0e0d0c-0000-4000-8000-000000000001", agent="fake",
        title="fake asks permission: rm -rf build", body="fake in repo waits for your answer",
    )  # fmt: skip
    assert made is not None
    return made


def dashboard_socket() -> WebsocketCommunicator:
    from svcproject.asgi import application

    token = config.current_auth().owner_token
    return WebsocketCommunicator(application, f"/ws/notifications?token={token}")


async def test_one_notification_reaches_every_target_exactly_once(
    push: PushEndpoint, sink: JsonSink
) -> None:
    phone = await subscribe(push.subscribe("phone"))
    channel = StubChannel("telegram")
    with settings_file({"notifications": {"urls": [sink.apprise_url("hook")]}}):
        async with running() as rt:
            rt.channel_notifiers = lambda: [channel]  # type: ignore[method-assign]
            ws = dashboard_socket()
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
    with settings_file({"notifications": {"urls": urls}}):
        async with running() as rt:
            quick(rt, timeout_s=1.0)
            rt.channel_notifiers = lambda: [channel, StubChannel("slack", hang=True)]  # type: ignore[method-assign]
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
    assert rows[f"webpush:{stuck}"] == {
        **rows[f"webpush:{stuck}"], "status": "failed", "attempts": 3,
        "error": "no answer within 1 s",
    }  # fmt: skip
    assert rows["channel:slack"]["status"] == "failed" and rows["channel:slack"]["attempts"] == 3
    assert rows[f"webpush:{broken}"]["status"] == "failed"
    assert rows[f"webpush:{broken}"]["error"] == "the push service answered 500"
    assert rows["apprise:1"]["status"] == "failed" and rows["apprise:1"]["attempts"] == 3
    assert "nobody" not in rows["apprise:1"]["error"]  # no URL paths in errors
    assert push.attempts == {"phone": 1, "stuck": 3, "broken": 3}
    assert len(push.payloads("phone")) == 1 and len(sink.bodies("ok")) == 1


async def test_a_410_removes_the_subscription_without_retrying(push: PushEndpoint) -> None:
    gone = await subscribe(push.subscribe("gone", answer=410))
    kept = await subscribe(push.subscribe("kept"))
    async with running() as rt:
        quick(rt)
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


async def test_after_a_restart_nothing_is_resent_and_leftovers_are_failed(
    push: PushEndpoint, sink: JsonSink
) -> None:
    stuck = await subscribe(push.subscribe("stuck", slow_s=30))
    with settings_file({"notifications": {"urls": [sink.apprise_url("hook")]}}):
        async with running() as rt:
            made = await notify(rt)
            await until(lambda: push.attempts.get("stuck") == 1 and sink.bodies("hook"), limit=5)
        # stopped while the push was under way: failed, with why
        rows = await adeliveries(made["id"])
        assert rows[f"webpush:{stuck}"]["status"] == "failed"
        assert rows[f"webpush:{stuck}"]["error"] == "svc stopped before delivering"

        # a run killed outright leaves rows pending: the next start fails them, sends nothing
        cut = await sync_to_async(_pending_leftover)()
        async with running() as rt:
            await asyncio.sleep(0.5)
            assert not rt.notifier._tasks
    assert (await adeliveries(cut))["apprise:0"]["status"] == "failed"
    assert (await adeliveries(cut))["apprise:0"]["error"] == "svc stopped before delivering"
    assert push.attempts == {"stuck": 1}
    assert len(sink.bodies("hook")) == 1  # the first notification's, once


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
        **rows["apprise:0"], "status": "failed", "attempts": 0,
        "error": "notifications.urls[0] must be an Apprise URL string",
    }  # fmt: skip
    assert rows["apprise:1"]["status"] == "failed" and rows["apprise:1"]["attempts"] == 1
    assert "not a URL Apprise knows" in rows["apprise:1"]["error"]
    assert rows["apprise:2"]["status"] == "failed"
    stored = str(await sync_to_async(lambda: list(Delivery.objects.values_list()))())
    assert "hunter2" not in stored and "abc123" not in stored
