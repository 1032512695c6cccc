"""The Telegram channel in-process (contract §14), driven through a fake Bot API server
(harness/fakes/telegram_api.py) by the real python-telegram-bot: a conversation streamed into one
edited message at Telegram's rate, long answers split, strangers, permission buttons, /pickup
with the dashboard watching the same turns, the commands, files, a dead agent (queued messages:
test_telegram_queue.py), a wrong token, and the Bot API going away and back."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from channels.db import database_sync_to_async

from harness.fakes.telegram_api import FakeTelegram
from harness.runtime import running, settings_file, wait_status
from svcproject.assembly import build as build_parts
from svcproject.parts import Parts
from tests.channels_app.telegram_chat import (
    OWNER,
    STRANGER,
    only_session,
    polled_again,
    prompts_of,
    sessions,
    settings,
    texts,
    until_sent,
)

pytestmark = pytest.mark.django_db(transaction=True)


async def test_the_answer_is_one_message_edited_at_most_every_one_and_a_half_seconds(
    tg: FakeTelegram, svc: Parts
) -> None:
    tg.send_text(OWNER, "sleep 5")
    await until_sent(tg, "— done")
    assert len(tg.sent(OWNER)) == 1  # one message for the turn
    made = await sessions()
    assert [(s.kind, s.agent) for s in made] == [("chat", "fake")]
    times = [e["t"] for e in tg.edits(OWNER) if e["ok"]]
    assert len(times) >= 3, tg.edits(OWNER)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 1.5 - 0.01, gaps


async def test_an_answer_longer_than_4096_characters_is_split(tg: FakeTelegram, svc: Parts) -> None:
    words = [f"w{i:04d}" for i in range(1000)]  # 5,999 characters
    tg.send_text(OWNER, "echo " + " ".join(words))
    await until_sent(tg, "— done", timeout=60)
    shown = texts(tg)
    assert len(shown) == 2 and all(len(t) <= 4096 for t in shown)
    joined = " ".join(shown)
    assert all(w in joined for w in (words[0], words[500], words[-1]))


async def test_a_stranger_gets_one_reply_with_their_id_and_nothing_else_happens(
    tg: FakeTelegram, svc: Parts
) -> None:
    tg.send_text(STRANGER, "echo hello")
    reply = await until_sent(tg, str(STRANGER), chat=STRANGER)
    assert "channels.telegram.allowed_users" in reply[0]["text"]
    await polled_again(tg)  # svc is done with that update: whatever it did is in the log
    assert len(tg.sent(STRANGER)) == 1
    assert await sessions() == []  # no session row, so nothing reached an agent


async def test_a_permission_request_is_buttons_and_a_tap_answers_the_agent(
    tg: FakeTelegram, svc: Parts
) -> None:
    tg.send_text(OWNER, "permission")
    asked = await tg.async_wait_for(
        lambda: [m for m in tg.sent(OWNER) if m.get("reply_markup")], timeout=30
    )
    buttons = asked[0]["reply_markup"]["inline_keyboard"]
    first = buttons[0][0]
    tg.tap(OWNER, asked[0]["message_id"], first["callback_data"])
    answer = await until_sent(tg, "— done")
    chosen = tg.message(OWNER, asked[0]["message_id"])
    assert chosen is not None
    assert chosen["text"] == f"🔐 Answered by {OWNER}: {first['text']}"
    assert not chosen.get("reply_markup")  # the buttons are gone
    assert "allow" in answer[0]["text"].lower() or first["text"].lower() in answer[0]["text"]


async def test_pickup_continues_a_handed_over_session_while_the_dashboard_watches(
    tg: FakeTelegram, svc: Parts, tmp_path: Path
) -> None:
    from sessions_app import services
    from tests.mcp_app.test_tools_inprocess import call, mcp

    session = await services.asession_create(
        host=svc.host, agent="fake", workspace=str(tmp_path), kind="chat"
    )
    chat = svc.host.chat(str(session.id))
    seen: list[dict] = []
    watching = await chat.subscribe(seen.append)  # what the dashboard's /ws/chat does
    watching.start()
    await chat.prompt("echo before the handover")
    async with mcp(svc, session_id=str(session.id)) as agent:  # the agent's own MCP call, by SDK
        code = (await call(agent, "prepare_handover"))["code"]

    tg.send_text(OWNER, f"/pickup {code}")
    picked = await until_sent(tg, "Picked up")
    assert "before the handover" in picked[0]["text"]  # its history, summarised
    tg.send_text(OWNER, "echo from telegram")
    await tg.async_wait_for(
        lambda: [t for t in texts(tg) if "from telegram" in t and "— done" in t], timeout=30
    )
    await tg.async_wait_for(
        lambda: any("telegram" in e.get("text", "") for e in seen if e["kind"].endswith("chunk")),
        timeout=10,
    )
    await chat.prompt("echo from the dashboard")  # and the chat sees the dashboard's turn
    await until_sent(tg, "from the dashboard")
    assert len(await sessions()) == 1


async def test_the_commands(tg: FakeTelegram, svc: Parts, tmp_path: Path) -> None:
    tg.send_text(OWNER, "/help")
    await until_sent(tg, "/pickup CODE")
    tg.send_text(OWNER, "/status")
    await until_sent(tg, "No session yet")
    tg.send_text(OWNER, "/new")
    await until_sent(tg, "New session")
    tg.send_text(OWNER, "/frobnicate")
    unknown = await until_sent(tg, "Unknown command /frobnicate")
    assert "/help" in unknown[0]["text"]
    tg.send_text(OWNER, "sleep 20")
    await until_sent(tg, "....")  # the turn is under way at the agent
    tg.send_text(OWNER, "/cancel")
    await until_sent(tg, "— ended: cancelled")
    tg.send_text(OWNER, "/status")
    await until_sent(tg, ": fake, idle")
    tg.send_text(OWNER, "/handover")
    handed = await until_sent(tg, "Handover code:")
    assert len(handed[0]["text"].split("Handover code: ", 1)[1].split(" ", 1)[0]) == 4
    tg.send_text(OWNER, "/new")
    await tg.async_wait_for(lambda: sum("New session" in t for t in texts(tg)) == 2, timeout=30)
    tg.send_text(OWNER, "/sessions")
    listed = await until_sent(tg, "← current")
    assert listed[0]["text"].startswith("1. ")
    tg.send_text(OWNER, "/switch 2")
    await until_sent(tg, "Now on session")


async def test_a_photo_lands_in_the_inbox_and_the_prompt_names_it(
    tg: FakeTelegram, svc: Parts, tmp_path: Path
) -> None:
    tg.send_photo(OWNER, b"\x89PNG\r\n\x1a\nfake image bytes", caption="prompts")
    answer = await until_sent(tg, ".svc-inbox/")
    saved = list((tmp_path / ".svc-inbox").iterdir())
    assert len(saved) == 1 and saved[0].read_bytes().endswith(b"fake image bytes")
    assert saved[0].name in answer[0]["text"]


async def test_a_message_to_a_dead_agent_says_so_and_offers_new(
    tg: FakeTelegram, svc: Parts
) -> None:
    tg.send_text(OWNER, "crash")
    await tg.async_wait_for(lambda: texts(tg), timeout=30)
    crashed = await database_sync_to_async(only_session)()
    await tg.async_wait_for(lambda: svc.host.chat(crashed) is None, timeout=10)
    tg.send_text(OWNER, "echo anyone there")
    told = await until_sent(tg, "no longer running")
    assert "/new" in told[0]["text"]


async def test_a_wrong_token_is_an_error_naming_the_setting(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    wrong = settings(tg, tmp_path)
    wrong["channels"]["telegram"]["bot_token"] = "999:WRONG"
    with settings_file(wrong):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            failed = await wait_status(runtime, "telegram", "error")
    assert "channels.telegram.bot_token_env or bot_token" in failed["detail"]


async def test_the_bot_api_going_away_and_back_loses_and_repeats_nothing(
    tg: FakeTelegram, svc: Parts
) -> None:
    await asyncio.to_thread(tg.go_away)
    await wait_status(svc, "telegram", "error", limit=60)
    watcher = {s["name"]: s for s in svc.supervisor.statuses()}["settings-watcher"]
    assert watcher["status"] == "online"  # the rest of svc carries on
    tg.send_text(OWNER, "echo while away")
    await asyncio.to_thread(tg.come_back)
    await wait_status(svc, "telegram", "online", limit=60)
    await until_sent(tg, "— done")
    assert sum("while away" in t for t in texts(tg)) == 1
    asked = await database_sync_to_async(prompts_of)("echo while away")
    assert asked == 1  # the agent was asked once: the redelivered update was not taken again


async def test_a_notification_reaches_the_channels_notify_chat_once(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    with settings_file(settings(tg, tmp_path, notify_chat=str(OWNER))):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "telegram", "online")
            tg.send_text(OWNER, "/help")  # a bot may write only to someone who wrote to it
            await until_sent(tg, "/pickup CODE")
            await runtime.notifier.notify(
                "permission_requested",
                session_id=None,
                agent="fake",
                title="fake asks for permission",
                body="edit notes.md",
            )
            sent = await until_sent(tg, "fake asks for permission")
    # The runtime has stopped (its notifier first): no delivery can follow.
    assert "edit notes.md" in sent[0]["text"]
    assert sum("fake asks for permission" in t for t in texts(tg)) == 1


async def test_a_chat_that_drove_a_turn_gets_its_answer_not_also_a_notice(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    """The chat is also the channel's notify_chat: the answer arrives there, marked done, and no
    "finished its turn" notification follows it into the same chat (issue 33)."""
    with settings_file(settings(tg, tmp_path, notify_chat=str(OWNER))):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "telegram", "online")
            tg.send_text(OWNER, "echo from the phone")
            await until_sent(tg, "— done")

            async def notified() -> bool:
                from notifications_app.models import Notification

                found = Notification.objects.filter(event="turn_ended")
                return await database_sync_to_async(found.exists)()

            for _ in range(200):  # the turn's end is notified (no dashboard shows the chat)
                if await notified():
                    break
                await asyncio.sleep(0.05)
            assert await notified()
            await runtime.notifier.wait_idle()  # every target has had its delivery
    assert not [t for t in texts(tg) if "finished its turn" in t], texts(tg)
    assert sum("— done" in t for t in texts(tg)) == 1


async def test_a_file_too_large_for_a_bot_is_named_not_dropped(
    tg: FakeTelegram, svc: Parts, tmp_path: Path
) -> None:
    big = b"x" * (20 * 1024 * 1024 + 1)  # one byte past what getFile hands a bot
    tg.send_document(OWNER, big, "recording.wav", caption="echo and the rest")
    told = await until_sent(tg, "recording.wav")
    assert "larger than" in told[0]["text"]
    await until_sent(tg, "and the rest")  # the message itself still reached the agent
    assert not (tmp_path / ".svc-inbox").exists()


async def test_resume_brings_the_chats_stopped_session_back_and_a_stranger_cannot(
    tg: FakeTelegram, svc: Parts
) -> None:
    from sessions_app import services

    tg.send_text(OWNER, "echo first")
    await until_sent(tg, "— done")
    sid = await database_sync_to_async(only_session)()
    await services.asession_stop(host=svc.host, session_id=sid)  # e.g. the dashboard's Stop
    tg.send_text(OWNER, "echo lost")
    told = await until_sent(tg, "no longer running")
    assert "/resume" in told[0]["text"]

    tg.send_text(STRANGER, "/resume")
    await until_sent(tg, str(STRANGER), chat=STRANGER)
    assert svc.host.chat(sid) is None
    tg.send_text(OWNER, "/resume nope")
    await until_sent(tg, "Say which: /resume")

    tg.send_text(OWNER, "/resume")
    await until_sent(tg, f"Session {sid[:8]} (fake) is running again")
    row = (await sessions())[0]
    assert (str(row.id), row.status, row.ended_by) == (sid, "running", "")
    tg.send_text(OWNER, "echo again")
    await tg.async_wait_for(
        lambda: [t for t in texts(tg) if "again" in t and "— done" in t], timeout=30
    )
    # The same session, its history once: the first prompt stored once, the lost one never.
    counts = await database_sync_to_async(lambda: [prompts_of(t) for t in PROMPTS])()
    assert counts == [1, 0, 1]
    assert len(await sessions()) == 1
    await services.asession_stop(host=svc.host, session_id=sid)


PROMPTS = ("echo first", "echo lost", "echo again")
