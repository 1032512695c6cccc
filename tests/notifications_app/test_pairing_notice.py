"""A pairing request's notice (contract §13, §15; issue 31, finding 4): anyone who reaches the
tunnel can start pairings, as many as they like, with a User-Agent and a Host they wrote. A
flood makes one notice a minute, and a notice carries none of their text — only a description
from a fixed list. Apprise gets every body as plain text, so each service escapes it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from harness.fakes.apprise_target import JsonSink
from harness.runtime import running, settings_file
from notifications_app import coalesce, events, hub
from notifications_app.models import Notification
from remote_app import signals
from svcproject.parts import Parts
from tests.notifications_app.support import adeliveries

HOSTILE_UA = "Owner iPhone - your code is 123456, approve it now via https://evil.example"
HOSTILE_HOST = "evil.example"
ATTACKER_WORDS = ("123456", "evil", "approve it now")


@pytest.fixture
async def rt(sink: JsonSink) -> AsyncIterator[Parts]:
    with settings_file({"notifications": {"urls": [sink.apprise_url("pair")]}}):
        async with running() as runtime:
            yield runtime


@sync_to_async
def pairing_notices() -> list[dict[str, Any]]:
    rows = Notification.objects.filter(event="pairing_requested").order_by("created_at")
    return [n.to_dict() for n in rows]


async def settled(runtime: Parts) -> None:
    """Every notice handed over from a request thread has been made and delivered."""
    for _ in range(3):  # call_soon_threadsafe hand-overs, then the tasks they spawn
        await asyncio.sleep(0)
        await runtime.notifier.wait_idle()


def asked(device: str, host: str) -> None:
    """A pairing request, told as remote access tells it (pair_start's on_commit)."""
    signals.pairing_requested.send_robust(sender=None, device=device, host=host)


@pytest.mark.django_db(transaction=True)
async def test_a_pairing_flood_makes_one_notice_with_none_of_the_askers_text(
    rt: Parts, sink: JsonSink
) -> None:
    # 32 pair starts at once, each on a request thread of its own, as pair_start's on_commit.
    start = [asyncio.to_thread(asked, HOSTILE_UA, HOSTILE_HOST) for _ in range(32)]
    await asyncio.gather(*start)
    await settled(rt)

    made = await pairing_notices()
    assert len(made) == 1
    [posted] = sink.bodies("pair")  # delivered once
    assert (await adeliveries(made[0]["id"]))["apprise:0"]["status"] == "sent"
    for text in (made[0]["title"], made[0]["body"], posted["title"], posted["message"]):
        assert not [word for word in ATTACKER_WORDS if word in text], text
    assert "an unknown browser on iPhone" in made[0]["body"]  # the fixed list's words
    assert "an unknown browser on iPhone" in posted["message"]

    # A minute later (the gate's stored time moved back, no sleeping) the next one goes out,
    # saying how many were held back meanwhile.
    rt.notifier.pairing_notices.last -= hub.PAIRING_WINDOW_S + 1
    await asyncio.to_thread(
        asked,
        "Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
        HOSTILE_HOST,
    )
    await settled(rt)
    second = (await pairing_notices())[1:]
    assert len(second) == 1 and len(sink.bodies("pair")) == 2
    assert "Firefox on Linux" in second[0]["body"]
    assert "31 more pairing requests came since the last notice." in second[0]["body"]
    assert "evil" not in second[0]["body"]


@pytest.mark.parametrize(
    ("user_agent", "described"),
    [
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
            "Safari on iPhone",
        ),
        (
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/126.0.0.0 Mobile Safari/537.36",
            "Chrome on Android",
        ),
        (
            "Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
            "Firefox on Linux",
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
            "Edge on Windows",
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) Version/17.5 Safari/605.1.15",
            "Safari on macOS",
        ),
        (
            "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1",
            "Chrome on iPad",
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; SAMSUNG SM-S918B) AppleWebKit/537.36 "
            "(KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36",
            "Samsung Internet on Android",
        ),
        (
            "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/126.0.0.0 Safari/537.36",
            "Chrome on ChromeOS",
        ),
        ("curl/8.5.0", "an unknown browser"),
        ("", "an unknown browser"),
        (HOSTILE_UA, "an unknown browser on iPhone"),
    ],
)
def test_a_device_is_described_in_fixed_words(user_agent: str, described: str) -> None:
    assert events.describe_device(user_agent) == described


def test_the_gate_lets_one_through_a_window_and_counts_the_rest() -> None:
    now = [1000.0]
    gate = coalesce.Coalesce(60.0, clock=lambda: now[0])
    assert gate.admit() == 0
    assert [gate.admit() for _ in range(5)] == [None] * 5
    now[0] += 59.9
    assert gate.admit() is None
    now[0] += 0.2
    assert gate.admit() == 6 and gate.admit() is None


@pytest.mark.django_db(transaction=True)
async def test_apprise_gets_the_body_as_plain_text(sink: JsonSink) -> None:
    """An HTML service (Apprise's `format=html`) gets markup in a body escaped, not rendered."""
    with settings_file({"notifications": {"urls": [sink.apprise_url("html?format=html")]}}):
        async with running() as runtime:
            made = await runtime.notifier.notify(
                "pairing_requested", title="t", body='<a href="https://x.test">tap</a> & <b>'
            )
            assert made is not None
            await settled(runtime)
    [posted] = sink.bodies("html")
    assert "&lt;a" in posted["message"] and "<a href" not in posted["message"]
