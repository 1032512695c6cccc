"""Messages to a Telegram chat whose agent is busy (contract §17): answered in order, queued
and shown with Send now / Remove buttons, /queue, and the dashboard's view of the same queue."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from harness.fakes.telegram_api import FakeTelegram
from svcproject.parts import Parts
from tests.channels_app.telegram_chat import (
    OWNER,
    STRANGER,
    only_session,
    prompts_of,
    texts,
    until_sent,
)

pytestmark = pytest.mark.django_db(transaction=True)


async def test_messages_sent_while_the_agent_is_busy_are_answered_in_order(
    tg: FakeTelegram, svc: Parts
) -> None:
    tg.send_text(OWNER, "sleep 1")
    tg.send_text(OWNER, "echo second")
    tg.send_text(OWNER, "echo third")
    await tg.async_wait_for(lambda: sum("— done" in t for t in texts(tg)) == 3, timeout=30)
    shown = texts(tg)
    order = [next(i for i, t in enumerate(shown) if n in t) for n in ("...", "second", "third")]
    assert order == sorted(order)


async def test_a_message_sent_during_a_turn_is_queued_shown_and_can_be_taken_back(
    tg: FakeTelegram, svc: Parts
) -> None:
    tg.send_text(OWNER, "count 30 100")
    await until_sent(tg, "1 ")
    for text in ("echo one", "echo dropped", "echo two"):
        tg.send_text(OWNER, text)
        await until_sent(tg, f"({('one', 'dropped', 'two').index(text[5:]) + 1} waiting)")
    queued = [m for m in tg.sent(OWNER) if m.get("text", "").startswith("⏳ Queued")]
    assert len(queued) == 3 and all(m.get("reply_markup") for m in queued)
    remove = queued[1]["reply_markup"]["inline_keyboard"][1][0]  # a button per row
    assert remove["text"] == "Remove"
    # Someone else in the chat (a group member not in allowed_users) presses Send now: nothing.
    now = queued[0]["reply_markup"]["inline_keyboard"][0][0]
    tg.tap(STRANGER, queued[0]["message_id"], now["callback_data"], chat_id=OWNER)
    tg.tap(OWNER, queued[1]["message_id"], remove["callback_data"])
    await until_sent(tg, "Removed from the queue.")
    tg.send_text(OWNER, "/queue")
    listed = await until_sent(tg, "Waiting for the running turn")
    assert listed[0]["text"].splitlines()[1:] == ["1. echo one", "2. echo two"]
    # The dashboard's view of the same queue: the telegram chat is named as the source.
    waiting = await database_sync_to_async(_queued)()
    assert [(q["text"], q["source"]) for q in waiting] == [
        ("echo one", "telegram"),
        ("echo two", "telegram"),
    ]
    await tg.async_wait_for(lambda: sum("— done" in t for t in texts(tg)) == 3, timeout=30)
    shown = texts(tg)
    answers = [i for i, t in enumerate(shown) if "— done" in t]
    assert "30" in shown[answers[0]] and "one" in shown[answers[1]] and "two" in shown[answers[2]]
    assert await database_sync_to_async(prompts_of)("echo dropped") == 0
    assert not any("cancelled" in t for t in shown)  # the stranger's Send now did nothing
    assert await database_sync_to_async(prompts_of)("echo one") == 1


def _queued() -> list[dict[str, Any]]:
    from sessions_app.prompt_queue import queued_list

    return queued_list(only_session())
