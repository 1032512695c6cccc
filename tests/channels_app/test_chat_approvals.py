"""A permission answered with a chat channel's button is recorded as decided on that platform, by
that person (contract §17, issue 33 item 4): Telegram through the fake Bot API and the real
python-telegram-bot, Slack through the fake Slack and the real slack-bolt."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async

from harness.fakes.slack_api import FakeSlack
from harness.fakes.telegram_api import FakeTelegram
from harness.runtime import running, settings_file, wait_status
from svcproject.assembly import build as build_parts

pytestmark = pytest.mark.django_db(transaction=True)
FAKE_ACP = str(Path(__file__).resolve().parents[2] / "harness" / "fakes" / "acp_agent.py")
TG_OWNER, SLACK_OWNER = 111, "U0OWNER"


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(retry_delays=(0.0, 0.5, 1.0)).start()
    yield fake
    fake.stop()


async def recorded() -> list[dict[str, Any]]:
    from sessions_app import selectors

    return await database_sync_to_async(selectors.approval_list_dicts)()


async def test_a_telegram_button_is_recorded_as_telegram_and_the_person_who_pressed_it(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    settings = {
        "agents": {"fake": {"acp_command": [sys.executable, FAKE_ACP]}},
        "channels": {
            "telegram": {
                "bot_token": tg.token,
                "api_base": tg.api_base,
                "allowed_users": [TG_OWNER],
                "agent": "fake",
                "workspace": str(tmp_path),
            }
        },
    }
    with settings_file(settings):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "telegram", "online")
            await _telegram_turn(tg)
    rows = await recorded()
    assert len(rows) == 1
    row = rows[0]
    assert row["decided_by"] == {"surface": "telegram", "who": f"@ada_l ({TG_OWNER})"}
    assert row["chosen"] == "allow" and row["title"] == "rm -rf build" and row["agent"] == "fake"
    assert datetime.fromisoformat(row["requested_at"]) <= datetime.fromisoformat(row["decided_at"])


async def _telegram_turn(tg: FakeTelegram) -> None:
    tg.send_text(TG_OWNER, "permission", first_name="Ada", username="ada_l")
    asked = await tg.async_wait_for(
        lambda: [m for m in tg.sent(TG_OWNER) if m.get("reply_markup")], timeout=30
    )
    allow = asked[0]["reply_markup"]["inline_keyboard"][0][0]
    assert allow["text"] == "Allow once"
    tg.tap(TG_OWNER, asked[0]["message_id"], allow["callback_data"], first_name="Ada")
    await tg.async_wait_for(
        lambda: [m for m in tg.sent(TG_OWNER) if "— done" in m.get("text", "")], timeout=30
    )


async def test_a_telegram_button_sent_before_svc_restarted_answers_the_request_once(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    """svc stops (SIGTERM, `host.on_exit: "keep"`) while the agent waits for the answer to a
    request whose buttons it sent; the holder keeps the agent asking. Tapped after the next
    start, the buttons answer it (issue 42): the new run had not sent them, and the tap did
    nothing."""
    from tests.channels_app.telegram_chat import settings, until_sent

    with settings_file(settings(tg, tmp_path)):
        first = build_parts(backoff_first_s=0.2)  # not harness.runtime.running: the holder stays
        await first.runtime.start()
        try:
            await wait_status(first, "telegram", "online")
            tg.send_text(TG_OWNER, "permission", first_name="Ada", username="ada_l")
            asked = await tg.async_wait_for(
                lambda: [m for m in tg.sent(TG_OWNER) if m.get("reply_markup")], timeout=30
            )
        finally:
            # The holder keeps the agent (and its request) for the next run.
            await first.runtime.stop()
        async with running(build_parts(backoff_first_s=0.2)) as second:
            await wait_status(second, "telegram", "online")
            allow = asked[0]["reply_markup"]["inline_keyboard"][0][0]
            tg.tap(TG_OWNER, asked[0]["message_id"], allow["callback_data"], first_name="Ada")
            await until_sent(tg, f"Answered by {TG_OWNER}: Allow once")
            await until_sent(tg, "permission: allow")
    rows = await recorded()
    assert [(r["chosen"], r["decided_by"]) for r in rows] == [
        ("allow", {"surface": "telegram", "who": f"@ada_l ({TG_OWNER})"})
    ]


async def test_a_slack_button_is_recorded_as_slack_and_the_person_who_clicked_it(
    slack: FakeSlack, tmp_path: Path
) -> None:
    settings = {
        "agents": {"fake": {"acp_command": [sys.executable, FAKE_ACP]}},
        "channels": {
            "slack": {
                "kind": "slack",
                "bot_token": slack.bot_token,
                "app_token": slack.app_token,
                "api_base": slack.base_url,
                "allowed_users": [SLACK_OWNER],
                "agent": "fake",
                "workspace": str(tmp_path),
            }
        },
    }
    slack.add_user(SLACK_OWNER, "ada")
    with settings_file(settings):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "slack", "online")
            asked = slack.post_message(SLACK_OWNER, "permission")

            def buttons() -> list[dict]:
                return [
                    m
                    for m in slack.posted()
                    if m.get("thread_ts") == asked
                    and any(b.get("type") == "actions" for b in m.get("blocks") or [])
                ]

            question = (await slack.wait_for_async(buttons, timeout=30))[0]
            slack.click(SLACK_OWNER, "C1", question["ts"], "svc_1")  # the second: reject
            await slack.wait_for_async(
                lambda: [m for m in slack.posted() if "— done" in m["text"]], timeout=30
            )
    rows = await recorded()
    assert [(r["decided_by"], r["chosen"]) for r in rows] == [
        ({"surface": "slack", "who": f"ada ({SLACK_OWNER})"}, "reject")
    ]
