"""The Slack channel in-process (contract §14), driven through a fake Slack (Web API and Socket
Mode, harness/fakes/slack_api.py) by the real slack-bolt and slack-sdk: a conversation in a
thread, the permission buttons, strangers, a wrong token, and the platform going away."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async

from harness.fakes.slack_api import FakeSlack
from harness.runtime import running, settings_file, wait_status
from svcproject.assembly import build as build_parts
from svcproject.parts import Parts

pytestmark = pytest.mark.django_db(transaction=True)
FAKE_ACP = str(Path(__file__).resolve().parents[2] / "harness" / "fakes" / "acp_agent.py")
OWNER = "U0OWNER"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(retry_delays=(0.0, 0.5, 1.0)).start()
    yield fake
    fake.stop()


def settings(fake: FakeSlack, workspace: Path, **extra: Any) -> dict[str, Any]:
    return {
        "agents": {"fake": {"acp_command": [sys.executable, FAKE_ACP]}},
        "channels": {
            "slack": {
                "kind": "slack",
                "bot_token": fake.bot_token,
                "app_token": fake.app_token,
                "api_base": fake.base_url,
                "allowed_users": [OWNER],
                "agent": "fake",
                "workspace": str(workspace),
                **extra,
            }
        },
    }


@pytest.fixture
async def svc(slack: FakeSlack, tmp_path: Path) -> AsyncIterator[Parts]:
    with settings_file(settings(slack, tmp_path)):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "slack", "online")
            yield runtime


def thread_of(fake: FakeSlack, ts: str) -> list[dict]:
    return [m for m in fake.posted() if m.get("thread_ts") == ts]


async def session_count() -> int:
    from sessions_app.models import Session

    return await database_sync_to_async(Session.objects.count)()


async def test_a_message_starts_a_session_and_the_answer_streams_into_its_thread(
    slack: FakeSlack, svc: Parts
) -> None:
    asked = slack.post_message(OWNER, "echo hello from slack")
    done = await slack.wait_for_async(
        lambda: [m for m in thread_of(slack, asked) if "— done" in m["text"]], timeout=30
    )
    assert "hello from slack" in done[0]["text"]
    assert await session_count() == 1
    # The thread is the conversation: a reply there goes to the same session.
    slack.post_message(OWNER, "echo again", thread_ts=asked)
    await slack.wait_for_async(
        lambda: [m for m in thread_of(slack, asked) if "again" in m["text"]], timeout=30
    )
    assert await session_count() == 1
    # The reply can reach the thread before the envelope's ack reaches Slack: wait for the acks.
    await slack.wait_for_async(slack.settled, timeout=10)
    slack.assert_acked_once()


async def test_a_permission_request_is_buttons_and_a_click_answers_it(
    slack: FakeSlack, svc: Parts
) -> None:
    asked = slack.post_message(OWNER, "permission")

    def buttons() -> list[dict]:
        return [
            m
            for m in thread_of(slack, asked)
            if any(b.get("type") == "actions" for b in m.get("blocks") or [])
        ]

    question = (await slack.wait_for_async(buttons, timeout=30))[0]
    slack.click(OWNER, "C1", question["ts"], "svc_0")
    await slack.wait_for_async(
        lambda: [m for m in thread_of(slack, asked) if "— done" in m["text"]], timeout=30
    )
    answered = next(m for m in slack.posted() if m["ts"] == question["ts"])
    assert answered["text"].startswith(f"🔐 Answered by {OWNER}:")
    assert not any(b.get("type") == "actions" for b in answered.get("blocks") or [])


async def test_a_stranger_is_told_their_id_and_nothing_starts(slack: FakeSlack, svc: Parts) -> None:
    asked = slack.post_message("U0STRANGER", "echo hi")
    reply = await slack.wait_for_async(lambda: thread_of(slack, asked), timeout=10)
    assert "U0STRANGER" in reply[0]["text"] and "allowed_users" in reply[0]["text"]
    assert await session_count() == 0


async def test_a_wrong_token_is_an_error_naming_the_setting(
    slack: FakeSlack, tmp_path: Path
) -> None:
    wrong = settings(slack, tmp_path)
    wrong["channels"]["slack"]["bot_token"] = "xoxb-wrong"
    with settings_file(wrong):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            failed = await wait_status(runtime, "slack", "error")
    assert "channels.slack.bot_token_env" in failed["detail"]
    assert "invalid_auth" in failed["detail"]


async def test_slack_going_away_and_back_loses_and_repeats_nothing(
    slack: FakeSlack, svc: Parts
) -> None:
    slack.go_away()
    await wait_status(svc, "slack", "starting", limit=30)  # shown as "connecting"
    asked = slack.post_message(OWNER, "echo while away")
    slack.come_back()
    await wait_status(svc, "slack", "online", limit=30)
    await slack.wait_for_async(
        lambda: [m for m in thread_of(slack, asked) if "— done" in m["text"]], timeout=30
    )
    answers = [m for m in thread_of(slack, asked) if "while away" in m["text"]]
    assert len(answers) == 1
