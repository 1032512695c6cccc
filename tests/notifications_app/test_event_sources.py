"""Each event source fires its notification where the event happens (contract §15): a pairing
request (from a request thread, not the loop), an ACP agent asking permission, a chat turn
ending with nobody watching, a hosted agent crashing, a subagent turn finishing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from harness.runtime import running, settings_file
from harness.termclient import hosting_settings
from notifications_app.models import Notification
from remote_app import pairing
from sessions_app.services import asession_create, asession_stop
from subagents_app import subagents
from svcproject.parts import Parts
from tests.notifications_app.support import until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fake_agent() -> Iterator[None]:
    with settings_file(hosting_settings()):
        yield


@pytest.fixture
async def rt(fake_agent: None) -> AsyncIterator[Parts]:
    async with running() as runtime:
        yield runtime


@sync_to_async
def notified(event: str | None = None) -> list[dict[str, Any]]:
    rows = Notification.objects.order_by("created_at")
    return [n.to_dict() for n in (rows.filter(event=event) if event else rows)]


async def first(event: str, limit: float = 15.0) -> dict[str, Any]:
    async def made() -> bool:
        return bool(await notified(event))

    await until(made, limit)
    return (await notified(event))[0]


async def test_pair_start_from_a_request_thread_notifies_pairing_requested(rt: Parts) -> None:
    started = await sync_to_async(pairing.pair_start)("Mozilla/5.0 (Android 15) Firefox", "t.test")
    made = await first("pairing_requested")
    assert made["title"] == "A device asks to pair with svc"
    assert "Firefox" in made["body"] and "t.test" not in made["body"]  # the asker's Host: never
    assert started.code not in made["body"] + made["title"]  # the code stays on the device
    assert made["session_id"] is None and made["url"].endswith("/")


async def test_a_permission_request_notifies_and_a_watched_turn_end_does_not(
    rt: Parts, tmp_path: Path
) -> None:
    session = await asession_create(
        host=rt.host, agent="fake", workspace=str(tmp_path), kind="chat"
    )
    sid = str(session.id)
    chat = rt.host.chat(sid)
    assert chat is not None
    seen: list[dict[str, Any]] = []
    watching = await chat.subscribe(seen.append)
    watching.start()
    turn = asyncio.ensure_future(chat.prompt("permission"))
    await until(lambda: any(e["kind"] == "permission_request" for e in seen))
    made = await first("permission_requested")
    assert made["title"] == "fake asks permission: rm -rf build"
    assert made["agent"] == "fake" and made["session_id"] == sid
    assert f"({sid[:8]})" in made["body"] and made["url"].endswith(f"/#session={sid}")
    request = next(e for e in seen if e["kind"] == "permission_request")
    assert chat.answer_permission(request["request_id"], "allow") is None
    assert await turn == "end_turn"
    await asyncio.sleep(0.3)
    assert await notified("turn_ended") == []  # somebody watched that turn end

    watching.close()  # the tab went away: the next turn's end is news
    assert await chat.prompt("echo done") == "end_turn"
    ended = await first("turn_ended")
    assert ended["title"] == "fake finished its turn" and ended["session_id"] == sid
    await asession_stop(host=rt.host, session_id=sid)
    await asyncio.sleep(0.3)
    assert await notified("session_failed") == []  # a stop somebody asked for is no failure


async def test_an_agent_that_crashes_notifies_session_failed(rt: Parts, tmp_path: Path) -> None:
    session = await asession_create(
        host=rt.host, agent="fake", workspace=str(tmp_path), kind="chat"
    )
    chat = rt.host.chat(str(session.id))
    assert chat is not None
    await chat.prompt("crash")
    made = await first("session_failed")
    assert made["title"] == "fake exited with code 3"
    assert made["session_id"] == str(session.id)


async def test_a_finished_subagent_turn_notifies_subagent_turn_completed(
    rt: Parts, tmp_path: Path
) -> None:
    turn = await sync_to_async(subagents.turn_create)(
        mode="parallel",
        cwd=str(tmp_path),
        agents=[
            {"agent": "fake", "name": "one", "task": "echo looked"},
            {"agent": "fake", "name": "two", "task": "echo around"},
        ],
    )
    rt.subagents.start(str(turn.id))
    made = await first("subagent_turn_completed", limit=30)
    assert made["title"] == "2 subagents finished (2 done)"
    assert "a parallel turn of fake" in made["body"]
    assert await notified("session_failed") == []  # its agents were stopped, not failed
