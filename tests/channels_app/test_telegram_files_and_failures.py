"""Telegram files and failed updates (contract §14; security review, issue 31, finding 6),
through the fake Bot API (harness/fakes/telegram_api.py) and the real python-telegram-bot: a
stranger's files are never fetched, and an update whose handling fails is recorded `failed`,
said to its sender, and never holds up the updates after it — not even across a restart."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async

from harness.fakes.telegram_api import FakeTelegram
from harness.runtime import running, settings_file, wait_status
from svcproject.assembly import build as build_parts
from svcproject.parts import Parts
from tests.channels_app.telegram_chat import (
    OWNER,
    STRANGER,
    polled_again,
    sessions,
    settings,
    texts,
    until_sent,
)

pytestmark = pytest.mark.django_db(transaction=True)
PNG = b"\x89PNG\r\n\x1a\nfake image bytes"


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


@pytest.fixture
async def svc(tg: FakeTelegram, tmp_path: Path) -> AsyncIterator[Parts]:
    with settings_file(settings(tg, tmp_path)):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "telegram", "online")
            yield runtime


def failed_events() -> list[tuple[str, str]]:
    from channels_app.models import HandledEvent

    rows = HandledEvent.objects.filter(status=HandledEvent.FAILED).order_by("at")
    return [(r.event_id, r.error) for r in rows]


def prompted_with(needle: str) -> int:
    from sessions_app.models import SessionEvent

    events = SessionEvent.objects.filter(kind="user_message_chunk")
    return sum(needle in str(e.payload.get("text", "")) for e in events)


def telegram_state(runtime: Parts) -> dict[str, Any]:
    return {s["name"]: s for s in runtime.supervisor.statuses()}["telegram"]


async def answered(tg: FakeTelegram, needle: str) -> None:
    await tg.async_wait_for(
        lambda: [t for t in texts(tg) if needle in t and "— done" in t], timeout=30
    )


async def test_a_strangers_photo_and_document_are_never_fetched(
    tg: FakeTelegram, svc: Parts
) -> None:
    """Each of the stranger's messages gets the one reply naming their id; svc never asks
    getFile about their files nor downloads one. Failed before the fix: `_take` called getFile
    and downloaded each file before `Channel.on_message` looked at allowed_users."""
    tg.send_photo(STRANGER, PNG, caption="look")
    tg.send_document(STRANGER, b"%PDF their plan", "plan.pdf")
    await tg.async_wait_for(lambda: len(tg.sent(STRANGER)) >= 2, timeout=30)
    await polled_again(tg)  # svc is done with both updates
    replies = texts(tg, STRANGER)
    assert len(replies) == 2, replies
    assert all(str(STRANGER) in t and "channels.telegram.allowed_users" in t for t in replies)
    assert tg.calls("getFile") == []
    assert tg.downloads() == []
    assert await sessions() == []


async def test_a_photo_whose_download_fails_is_recorded_failed_and_the_next_message_answered(
    tg: FakeTelegram, svc: Parts, tmp_path: Path
) -> None:
    """The download answers 500 every time. The owner reads one line naming the photo and the
    error, the update is recorded `failed`, the photo's caption never reaches the agent, the
    download is tried once, the service never restarts, and the next message is answered.
    Failed before the fix: the error escaped `_take` before the update was recorded, so the
    service crashed, got the same unconfirmed update again on restart, crashed again — the
    owner's next message waited behind it for ever, and nobody was told."""
    tg.fail_next("file", error_code=500, count=10**6)  # however often it is asked
    photo = tg.send_photo(OWNER, PNG, caption="what is this")
    tg.send_text(OWNER, "echo after the photo")
    told = (await until_sent(tg, "did not reach the agent"))[0]["text"]
    assert f"photo-{photo['message_id']}.jpg could not be downloaded" in told
    assert "Internal Server Error" in told and tg.token not in told
    await answered(tg, "after the photo")
    [(event_id, error)] = await database_sync_to_async(failed_events)()
    assert event_id.startswith("u") and "could not be downloaded" in error
    assert tg.token not in error
    assert len(tg.downloads()) == 1
    assert telegram_state(svc)["restarts"] == 0
    assert await database_sync_to_async(prompted_with)("what is this") == 0
    assert not (tmp_path / ".svc-inbox").exists()


async def test_a_failed_update_sent_again_after_a_restart_is_not_handled_again(
    tg: FakeTelegram, svc: Parts
) -> None:
    """The document's download answers 404, and the getUpdates after it fails, so the service
    restarts before Telegram heard the update was taken: the restarted service is handed the
    same update again (`handed_out` 2), skips it as recorded — one getFile, one download, one
    line to the owner — and answers the owner's next message. Failed before the fix: the
    download's error crashed the service before the update was recorded, on every redelivery
    (a restart loop; the next message was never answered)."""
    await tg.async_wait_for(  # svc's long poll is waiting: the failures below come after it
        lambda: any(c["status"] is None for c in tg.calls("getUpdates")), timeout=10
    )
    tg.fail_next("file", error_code=404, description="Not Found", count=10**6)
    tg.fail_next("getUpdates", error_code=500)
    tg.send_document(OWNER, b"my notes", "notes.txt", caption="read this")
    told = await until_sent(tg, "notes.txt could not be downloaded")
    await tg.async_wait_for(lambda: telegram_state(svc)["restarts"] >= 1, timeout=30)
    await wait_status(svc, "telegram", "online")
    tg.send_text(OWNER, "echo after the restart")
    await answered(tg, "after the restart")
    [(event_id, _)] = await database_sync_to_async(failed_events)()
    assert tg.handed_out(int(event_id[1:])) == 2  # Telegram did send it again
    assert len(tg.calls("getFile")) == 1 and len(tg.downloads()) == 1
    assert sum("did not reach the agent" in t for t in texts(tg)) == 1
    assert "Not Found" in told[0]["text"]


async def test_a_message_taken_as_the_service_restarts_is_answered_exactly_once(
    tg: FakeTelegram, svc: Parts
) -> None:
    """The issue's outage: a message arrives while the agent is busy (so it waits in the chat's
    queue), the next getUpdates fails and the service restarts. The inbox still holds it as taken
    and never handed over: the restarted service hands it over once — replayed, and not again
    when Telegram sends the same update a second time. Before the inbox: recorded, skipped on
    redelivery, never answered."""
    tg.send_text(OWNER, "sleep 3")
    await tg.async_wait_for(lambda: texts(tg), timeout=30)  # the first turn is under way
    await tg.async_wait_for(
        lambda: any(c["status"] is None for c in tg.calls("getUpdates")), timeout=10
    )
    tg.fail_next("getUpdates", error_code=502, description="Bad Gateway")
    tg.send_text(OWNER, "echo second message")
    await tg.async_wait_for(lambda: telegram_state(svc)["restarts"] >= 1, timeout=30)
    await wait_status(svc, "telegram", "online")
    await answered(tg, "second message")
    tg.send_text(OWNER, "echo third message")  # everything before it is done by then
    await answered(tg, "third message")
    assert await database_sync_to_async(prompted_with)("second message") == 1
    assert sum("second message" in t and "— done" in t for t in texts(tg)) == 1
