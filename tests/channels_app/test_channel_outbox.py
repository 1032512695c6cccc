"""The channels' outbox (contract §17, "Nothing sent to svc is lost"), in process through the fake
Bot API (harness/fakes/telegram_api.py) and the real python-telegram-bot: an answer the Bot API
could not take — sendMessage answering 502, or the server refusing connections — is delivered
once the Bot API is back, once, in order with the messages after it; one that stays
undeliverable for 24 h (time injected, not slept) is marked failed and shown in the API; an
answer still waiting when svc stops is delivered by the next run; a notification made while the
Bot API is away reaches the notify_chat when it is back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.utils import timezone

from harness.fakes.telegram_api import FakeTelegram
from harness.runtime import running, settings_file, wait_status
from svcproject.assembly import build as build_parts
from svcproject.parts import Parts
from tests.channels_app.telegram_chat import OWNER, settings, texts, until_sent

pytestmark = pytest.mark.django_db(transaction=True)
FOREVER = 10**6


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


def quick(runtime: Parts) -> None:
    """Retries 0.2 s apart at first, at most 1 s (the daemon's: 1 s doubling to 30 s)."""
    runtime.channels.retry_first_s, runtime.channels.retry_max_s = 0.2, 1.0


@pytest.fixture
async def svc(tg: FakeTelegram, tmp_path: Path) -> AsyncIterator[Parts]:
    with settings_file(settings(tg, tmp_path, notify_chat=str(OWNER))):
        runtime = build_parts(backoff_first_s=0.2)
        quick(runtime)
        async with running(runtime):
            await wait_status(runtime, "telegram", "online")
            yield runtime


def turns_ended() -> int:
    from sessions_app.models import SessionEvent

    return SessionEvent.objects.filter(kind="turn_end").count()


async def until_turns_ended(count: int, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while await database_sync_to_async(turns_ended)() < count:
            await asyncio.sleep(0.05)


def refused(tg: FakeTelegram, method: str = "sendMessage") -> int:
    return sum(c["status"] == 502 for c in tg.calls(method))


def tried_whole(tg: FakeTelegram) -> bool:
    """A refused sendMessage carried a whole answer: the edits were folded into the send."""
    calls = tg.calls("sendMessage")
    return any("— done" in c["params"].get("text", "") for c in calls if c["status"] == 502)


def done_with(tg: FakeTelegram, needle: str) -> list[str]:
    return [t for t in texts(tg) if needle in t and "— done" in t]


@sync_to_async
def channels_api(parts: Parts) -> dict[str, dict[str, Any]]:
    """GET /api/channels as the owner: each channel's row by name."""
    from core import config
    from harness.runtime import client

    token = config.current_auth().owner_token
    answer = client(parts).get("/api/channels", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code == 200, answer.content
    return {row["name"]: row for row in answer.json()}


async def test_answers_made_while_send_message_answers_502_arrive_once_in_order(
    tg: FakeTelegram, svc: Parts
) -> None:
    """sendMessage and editMessageText answer 502 Bad Gateway while two prompts are answered
    (getUpdates still works, so the prompts arrive); when the Bot API takes messages again each
    answer arrives once — one message each, showing its whole text, the first before the
    second — and a message sent afterwards follows them. Before the outbox: the answers were
    lost (the failed send's error ended the task that showed them; nothing tried again)."""
    tg.fail_next("sendMessage", error_code=502, description="Bad Gateway", count=FOREVER)
    tg.fail_next("editMessageText", error_code=502, description="Bad Gateway", count=FOREVER)
    tg.send_text(OWNER, "echo first answer")
    await until_turns_ended(1)
    tg.send_text(OWNER, "echo second answer")
    await until_turns_ended(2)
    await tg.async_wait_for(lambda: refused(tg) >= 2, timeout=10)  # svc did try, and again
    assert texts(tg) == []
    waiting = (await channels_api(svc))["telegram"]["outbox"]
    assert waiting["pending"] == 2 and waiting["failed"] == []
    assert "Bad Gateway" in waiting["error"]

    tg.clear_failures()
    await tg.async_wait_for(lambda: done_with(tg, "second answer"), timeout=30)
    tg.send_text(OWNER, "echo third answer")
    await tg.async_wait_for(lambda: done_with(tg, "third answer"), timeout=30)
    shown = texts(tg)
    assert len(shown) == 3, shown  # one message per answer: nothing twice
    assert "first answer" in shown[0] and "second answer" in shown[1]
    assert "third answer" in shown[2]
    assert all("— done" in t for t in shown)
    delivered = [c for c in tg.calls("sendMessage") if c["status"] == 200]
    assert len(delivered) == 3
    assert (await channels_api(svc))["telegram"]["outbox"] == {
        "pending": 0,
        "error": "",
        "failed": [],
    }


async def test_an_answer_made_while_the_bot_api_refuses_connections_arrives_once(
    tg: FakeTelegram, svc: Parts
) -> None:
    """The Bot API goes away (connection refused; the channel service restarts, with backoff)
    while a turn streams, and the turn ends during the outage. When the Bot API is back, the
    answer's one message shows the whole answer, marked done, once; a later message is answered
    after it. Before the outbox: the channel's restart stopped following the session, so the
    message stayed as it was when the Bot API went away."""
    tg.send_text(OWNER, "sleep 2 ; echo made during the outage")
    await until_sent(tg, "..")  # the answer is under way
    await asyncio.to_thread(tg.go_away)
    await until_turns_ended(1)
    assert not done_with(tg, "made during the outage")
    await asyncio.to_thread(tg.come_back)
    await wait_status(svc, "telegram", "online", limit=60)
    await tg.async_wait_for(lambda: done_with(tg, "made during the outage"), timeout=30)
    tg.send_text(OWNER, "echo after the outage")
    await tg.async_wait_for(lambda: done_with(tg, "after the outage"), timeout=30)
    shown = texts(tg)
    assert len(shown) == 2, shown
    assert "made during the outage" in shown[0] and "after the outage" in shown[1]


async def test_an_answer_undeliverable_for_24_hours_is_failed_and_shown(
    tg: FakeTelegram, svc: Parts
) -> None:
    """sendMessage answers 502 for good. The answer waits (pending) and is tried again; 24 h
    after it was made — the outbox's clock moved on, not slept — it is failed with the last
    error, and GET /api/channels shows it. Once the Bot API works again, the failed answer is
    not sent, and a new one is."""
    tg.fail_next("sendMessage", error_code=502, description="Bad Gateway", count=FOREVER)
    tg.send_text(OWNER, "echo never to arrive")
    await until_turns_ended(1)
    await tg.async_wait_for(lambda: tried_whole(tg), timeout=10)
    assert (await channels_api(svc))["telegram"]["outbox"]["pending"] == 1

    later = timezone.now() + timedelta(hours=24, minutes=1)
    svc.channels.clock = lambda: later
    svc.channels.wake()

    async def failed() -> list[dict[str, Any]]:
        return (await channels_api(svc))["telegram"]["outbox"]["failed"]

    async with asyncio.timeout(10):
        while not await failed():
            await asyncio.sleep(0.05)
    [row] = await failed()
    assert "never to arrive" in row["text"]
    assert row["error"].startswith("not delivered within 24 h") and "Bad Gateway" in row["error"]
    assert row["attempts"] >= 2 and row["chat"] == str(OWNER)
    assert (await channels_api(svc))["telegram"]["outbox"]["pending"] == 0

    svc.channels.clock = timezone.now
    tg.clear_failures()
    tg.send_text(OWNER, "echo a new answer")
    await tg.async_wait_for(lambda: done_with(tg, "a new answer"), timeout=30)
    assert texts(tg) == [done_with(tg, "a new answer")[0]]  # never the failed one


async def test_an_answer_waiting_when_svc_stops_is_delivered_by_the_next_run(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    """The answer could not be sent before svc stopped; the next svc (same database) delivers
    it once the Bot API takes it."""
    with settings_file(settings(tg, tmp_path)):
        first = build_parts(backoff_first_s=0.2)
        quick(first)
        async with running(first):
            await wait_status(first, "telegram", "online")
            tg.fail_next("sendMessage", error_code=502, description="Bad Gateway", count=FOREVER)
            tg.send_text(OWNER, "echo kept across a restart")
            await until_turns_ended(1)
            await tg.async_wait_for(lambda: tried_whole(tg), timeout=10)
        assert texts(tg) == []
        tg.clear_failures()
        second = build_parts(backoff_first_s=0.2)
        quick(second)
        async with running(second):
            await wait_status(second, "telegram", "online")
            await tg.async_wait_for(lambda: done_with(tg, "kept across a restart"), timeout=30)
    assert len(texts(tg)) == 1


async def test_a_notification_made_while_the_bot_api_is_away_arrives_when_it_is_back(
    tg: FakeTelegram, svc: Parts
) -> None:
    """The notify_chat's channel is not connected when the notification is made (its service
    restarts with backoff): the delivery waits, and the chat gets it once when the Bot API is
    back. Before: the channel was not among the targets while its service was down (no
    delivery at all), or its three quick attempts failed."""
    svc.notifier.attempt_timeout_s, svc.notifier.backoff_s = 1.0, (0.05, 0.05)
    svc.notifier.retry_first_s, svc.notifier.retry_max_s = 0.2, 1.0
    tg.send_text(OWNER, "/help")  # a bot may write only to someone who wrote to it
    await until_sent(tg, "/pickup CODE")
    await asyncio.to_thread(tg.go_away)
    await wait_status(svc, "telegram", "error", limit=60)
    made = await svc.notifier.notify(
        "permission_requested",
        session_id=None,
        agent="fake",
        title="fake asks while the Bot API is away",
        body="edit notes.md",
    )
    assert made is not None
    await asyncio.sleep(1.0)
    await asyncio.to_thread(tg.come_back)
    await until_sent(tg, "fake asks while the Bot API is away", timeout=60)
    await asyncio.sleep(1.0)  # nothing more comes
    assert sum("while the Bot API is away" in t for t in texts(tg)) == 1
    from tests.notifications_app.support import adeliveries

    row = (await adeliveries(made["id"]))["channel:telegram"]
    assert row["status"] == "sent" and row["attempts"] >= 2


class SlowPlatform:
    """Takes each message, then answers only when `answer` is set: the window in which a channel
    that stops has been heard by the platform but has not yet recorded it."""

    name, max_len, edit_every_s = "slow", 4096, 0.0

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.taken, self.answer = asyncio.Event(), asyncio.Event()

    async def send(self, chat: str, text: str, buttons: Any = None) -> str:
        self.sent.append(text)
        self.taken.set()
        await self.answer.wait()
        return str(len(self.sent))

    async def edit(self, chat: str, message_id: str, text: str, buttons: Any = None) -> None:
        self.sent.append(text)

    def retry_in(self, exc: Exception) -> float | None:
        return 0.0


async def test_a_channel_stopping_mid_send_records_the_send_and_never_sends_it_again() -> None:
    """The channel restarts (its delivery task cancelled) after the platform took a message but
    before it answered: the outbox lets that send finish and records it, so the next run sends
    nothing. Before the fix the cancel landed between the two, and the next run sent the
    message a second time (a duplicated "did not reach the agent" line, about 1 run in 14)."""
    from channels_app.answer import EditClock
    from channels_app.models import OutboxMessage
    from channels_app.outbox import Outbox

    platform = SlowPlatform()
    outbox = Outbox("slow", platform, EditClock(0.0), now=timezone.now, retry=lambda: (0.2, 1.0))
    running_outbox = asyncio.ensure_future(outbox.run(platform))
    await outbox.send("42", "only once")
    await asyncio.wait_for(platform.taken.wait(), 10)
    running_outbox.cancel()  # what the channel's `finally` does as it restarts
    await asyncio.sleep(0)
    platform.answer.set()
    await asyncio.gather(running_outbox, return_exceptions=True)
    statuses = await database_sync_to_async(
        lambda: list(OutboxMessage.objects.values_list("status", flat=True))
    )()
    assert statuses == [OutboxMessage.SENT]
    again = SlowPlatform()
    again.answer.set()
    second_run = asyncio.ensure_future(outbox.run(again))
    await asyncio.sleep(0.3)
    second_run.cancel()
    await asyncio.gather(second_run, return_exceptions=True)
    assert again.sent == [] and platform.sent == ["only once"]
