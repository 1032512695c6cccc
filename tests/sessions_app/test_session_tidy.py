"""Tidying the sessions list: removing an ended session (409 for a live one), filtering by
status and text, a chat's title (its first prompt, or the agent's own title), and who ended a
session (svc at its shutdown, the user) instead of a bare exit code."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from core import config

FAKE_ACP = str(Path(__file__).resolve().parents[2] / "harness" / "fakes" / "acp_agent.py")


@pytest.fixture
def api() -> Client:
    return Client(headers={"Authorization": f"Bearer {config.current_auth().owner_token}"})


def row(**fields: Any) -> Any:
    from sessions_app.models import Session

    return Session.objects.create(**{"agent": "shell", "workspace": "/tmp", **fields})


# --- remove -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_ended_session_is_removed_with_its_history(api: Client) -> None:
    from sessions_app.models import Session, SessionEvent

    ended = row(status="exited", exit_code=0, kind="chat")
    SessionEvent.objects.create(session=ended, seq=1, kind="user_message_chunk", payload={})
    answer = api.delete(f"/api/sessions/{ended.id}?remove=1")
    assert answer.status_code == 204, answer.content
    assert not Session.objects.filter(pk=ended.id).exists()
    assert not SessionEvent.objects.filter(session_id=ended.id).exists()
    assert api.delete(f"/api/sessions/{ended.id}?remove=1").status_code == 404


@pytest.mark.django_db
def test_a_live_session_is_not_removed(api: Client) -> None:
    from sessions_app.models import Session

    live = row(status="running", pid=1)
    answer = api.delete(f"/api/sessions/{live.id}?remove=1")
    assert answer.status_code == 409
    message = answer.json()["error"]["message"]
    assert "running" in message and "stop it first" in message
    assert Session.objects.filter(pk=live.id).exists()


# --- filter -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_list_filters_by_status_and_text(api: Client) -> None:
    live = row(status="running", pid=1, title="fix the parser")
    ended = row(status="exited", exit_code=0, title="write the docs")
    failed = row(status="failed", agent="fake", workspace="/srv/parser-work")

    def ids(query: str) -> set[str]:
        answer = api.get(f"/api/sessions{query}")
        assert answer.status_code == 200, answer.content
        return {s["id"] for s in answer.json()}

    assert ids("?status=live") == {str(live.id)}
    assert ids("?status=exited") == {str(ended.id), str(failed.id)}
    assert ids("?q=PARSER") == {str(live.id), str(failed.id)}  # title or workspace
    assert ids("?status=exited&q=parser") == {str(failed.id)}
    assert ids("?q=fake") == {str(failed.id)}  # the agent
    assert ids(f"?q={str(ended.id)[:8]}") == {str(ended.id)}  # the start of the id
    assert ids("") == {str(live.id), str(ended.id), str(failed.id)}
    wrong = api.get("/api/sessions?status=sleeping")
    assert wrong.status_code == 400 and "live, exited" in wrong.json()["error"]["message"]


# --- who ended it -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_list_says_who_ended_a_session(api: Client) -> None:
    row(status="exited", exit_code=129, ended_by="svc")
    row(status="exited", exit_code=137, ended_by="user")
    row(status="exited", exit_code=3)
    row(status="running", pid=1)
    reasons = sorted(s["detail"] for s in api.get("/api/sessions").json())
    assert reasons == ["", "exited with code 3", "stopped by you", "stopped when svc stopped"]


@pytest.mark.django_db(transaction=True)
async def test_live_sessions_no_holder_kept_are_interrupted_at_start() -> None:
    from sessions_app import services
    from sessions_app.host.registry import ProcessHost
    from sessions_app.models import Session

    gone = await database_sync_to_async(row)(status="running", pid=2**22 + 12345)
    taken, interrupted = await services.asessions_take_back(host=ProcessHost())
    assert (taken, [s.id for s in interrupted]) == (0, [gone.id])
    gone = await database_sync_to_async(Session.objects.get)(pk=gone.id)
    assert (gone.status, gone.ended_by, gone.exit_code) == ("exited", "interrupted", None)
    assert gone.to_dict()["end_reason"] == "interrupted"
    assert gone.to_dict()["detail"] == services.INTERRUPTED


async def create(parts: Any, tmp_path: Path, **fields: Any) -> Any:
    from sessions_app import services

    return await database_sync_to_async(services.session_create)(
        host=parts.host, workspace=str(tmp_path), **{"agent": "shell", **fields}
    )


async def get(session_id: Any) -> Any:
    from sessions_app.models import Session

    return await database_sync_to_async(Session.objects.get)(pk=session_id)


@pytest.mark.django_db(transaction=True)
async def test_svc_shutdown_and_the_user_stopping_are_recorded(tmp_path: Path, parts: Any) -> None:
    from sessions_app import services

    by_user = await create(parts, tmp_path)
    at_shutdown = await create(parts, tmp_path)
    await database_sync_to_async(services.session_stop)(host=parts.host, session_id=str(by_user.id))
    assert await parts.host.stop_all() >= 1
    for _ in range(100):  # the exit is recorded by the process's reaper
        if (await get(at_shutdown.id)).status == "exited":
            break
        await asyncio.sleep(0.05)
    user_row, svc_row = await get(by_user.id), await get(at_shutdown.id)
    assert (user_row.ended_by, user_row.to_dict()["end_reason"]) == ("user", "stopped")
    assert user_row.to_dict()["detail"] == "stopped by you"
    assert (svc_row.ended_by, svc_row.to_dict()["end_reason"]) == ("svc", "svc_stopped")
    assert svc_row.to_dict()["detail"] == "stopped when svc stopped"
    assert svc_row.exit_code is not None  # the code stays, under the reason


# --- title ------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_chat_is_titled_by_its_first_prompt_then_by_the_agent(
    tmp_path: Path, parts: Any
) -> None:
    from sessions_app import selectors, services

    config.write_settings({"agents": {"fake": {"acp_command": [sys.executable, FAKE_ACP]}}})
    chat = await create(parts, tmp_path, agent="fake", kind="chat")
    assert chat.title == ""
    acp = parts.host.chat(str(chat.id))
    try:
        await acp.prompt("echo   tidy\n  the sessions")  # whitespace folded, one line
        assert (await get(chat.id)).title == "echo tidy the sessions"
        await acp.prompt("echo a second prompt")  # only the first one names the chat
        assert (await get(chat.id)).title == "echo tidy the sessions"
        await acp.prompt("title Sessions tidy-up")  # the agent's own title wins
        assert (await get(chat.id)).title == "Sessions tidy-up"
        listed = await database_sync_to_async(selectors.session_list_dicts)(q="tidy-up")
        assert [s["title"] for s in listed] == ["Sessions tidy-up"]
    finally:
        await database_sync_to_async(services.session_stop)(
            host=parts.host, session_id=str(chat.id)
        )
