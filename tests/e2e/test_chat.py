"""Chat sessions with a hosted ACP agent over /ws/chat (issue 4, acceptance 3 and 4)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from harness.daemon import Daemon
from harness.termclient import (
    Chat,
    create_session,
    open_ws,
    start_hosting_daemon,
    stop_session,
)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # Unanswered permission requests are refused after this long (default 60 s).
    env = {"SVC_PERMISSION_TIMEOUT": "3"}
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-chat"), env)
    yield server
    server.stop()


async def open_chat(host: Daemon, workspace: Path, **fields: object) -> tuple[Chat, str]:
    chat = await Chat.connect(host)
    ready = await chat.open(agent="fake", workspace=str(workspace), **fields)
    assert ready["status"] == "running"
    assert ready["agent_info"] == {"name": "svc-fake-agent", "version": "1.2.3"}
    assert ready["agent_session_id"].startswith("fake-")
    return chat, ready["session_id"]


async def test_prompt_streams_chunks_then_turn_end(host: Daemon, tmp_path: Path) -> None:
    chat, sid = await open_chat(host, tmp_path)
    await chat.send(type="prompt", session_id=sid, text="echo hello from svc")
    end = await chat.next("turn_end")
    assert end["stop_reason"] == "end_turn"
    chunks = [e for e in chat.events if e["kind"] == "agent_message_chunk"]
    assert len(chunks) == 3
    assert chat.texts() == "hello from svc"
    await chat.send(type="prompt", session_id=sid, text="think deeply")
    await chat.next("turn_end")
    assert "hmm deeply" in chat.texts("agent_thought_chunk")
    await chat.close()
    stop_session(host, sid)


async def test_cancel_ends_the_turn_as_cancelled(host: Daemon, tmp_path: Path) -> None:
    chat, sid = await open_chat(host, tmp_path)
    await chat.send(type="prompt", session_id=sid, text="sleep 20")
    await chat.next("agent_message_chunk")
    await chat.send(type="cancel", session_id=sid)
    end = await chat.next("turn_end", timeout=3)
    assert end["stop_reason"] == "cancelled"
    await chat.close()
    stop_session(host, sid)


async def test_permission_answered_by_the_client(host: Daemon, tmp_path: Path) -> None:
    chat, sid = await open_chat(host, tmp_path)
    await chat.send(type="prompt", session_id=sid, text="permission")
    call = await chat.next("tool_call")
    assert call["title"] == "rm -rf build"
    asked = await chat.next("permission_request")
    assert [o["option_id"] for o in asked["options"]] == ["allow", "reject"]
    await chat.send(type="permission", request_id=asked["request_id"], option_id="nope")
    assert "option_id must be one of" in (await chat.next("error"))["message"]
    await chat.send(type="permission", request_id=asked["request_id"], option_id="allow")
    await chat.next("turn_end")
    assert chat.texts().endswith("permission: allow")
    assert (await_update := [e for e in chat.events if e["kind"] == "tool_call_update"])
    assert await_update[-1]["status"] == "completed"
    await chat.close()
    stop_session(host, sid)


async def test_unanswered_permission_is_refused(host: Daemon, tmp_path: Path) -> None:
    chat, sid = await open_chat(host, tmp_path)
    await chat.send(type="prompt", session_id=sid, text="permission")
    asked = await chat.next("permission_request")
    resolved = await chat.next("permission_resolved", timeout=10)
    assert resolved == {**resolved, "request_id": asked["request_id"], "answered": False}
    await chat.next("turn_end")
    assert chat.texts().endswith("permission: reject")
    await chat.close()
    stop_session(host, sid)


async def test_reopened_chat_replays_its_history(host: Daemon, tmp_path: Path) -> None:
    chat, sid = await open_chat(host, tmp_path)
    await chat.send(type="prompt", session_id=sid, text="echo first turn")
    await chat.next("turn_end")
    await chat.send(type="prompt", session_id=sid, text="plan")
    await chat.next("turn_end")
    await chat.close()

    again = await Chat.connect(host)
    ready = await again.open(session_id=sid)
    replayed = [e for e in again.events if e.get("replay")]
    assert [e["kind"] for e in replayed][:5] == [
        "user_message_chunk",
        "agent_message_chunk",
        "agent_message_chunk",
        "turn_end",
        "user_message_chunk",
    ]
    assert [e["seq"] for e in replayed] == list(range(1, len(replayed) + 1))
    assert any(e["kind"] == "plan" and len(e["entries"]) == 2 for e in replayed)
    assert ready["status"] == "running"
    # Still live: the reopened socket keeps chatting.
    await again.send(type="prompt", session_id=sid, text="echo second")
    await again.next("turn_end")
    assert again.texts().endswith("second")
    stop_session(host, sid)
    ended = await again.next("session", status="exited")
    assert ended["exit_code"] is not None
    # After the agent is gone the history is still there, from the database.
    late = await Chat.connect(host)
    gone = await late.open(session_id=sid)
    assert gone["status"] == "exited"
    assert "second" in late.texts()
    await again.close()
    await late.close()


async def test_the_agent_sees_its_environment(host: Daemon, tmp_path: Path) -> None:
    chat, sid = await open_chat(host, tmp_path, profile_id="p1")
    await chat.send(type="prompt", session_id=sid, text="env")
    await chat.next("turn_end")
    env = json.loads(chat.texts())
    assert env["SVC_SESSION_ID"] == sid
    assert env["SVC_AGENT"] == "fake"
    assert env["SVC_WORKSPACE"] == str(tmp_path.resolve())
    assert env["SVC_PROFILE_ID"] == "p1"
    assert env["SVC_BRIDGE_URL"] == f"http://127.0.0.1:{host.port}/svc/local-api/p1/fake.{sid}"
    await chat.close()
    stop_session(host, sid)


async def test_runtime_list_shows_busy_agents(host: Daemon, tmp_path: Path) -> None:
    runtime = await open_ws(host, "/ws/agents/runtime")
    chat, sid = await open_chat(host, tmp_path)
    await chat.send(type="prompt", session_id=sid, text="sleep 20")

    async def entry_where(predicate: object) -> dict:
        async with asyncio.timeout(5):
            while True:
                for entry in json.loads(await runtime.recv()):
                    if entry["session_id"] == sid and predicate(entry):  # type: ignore[operator]
                        return entry

    busy = await entry_where(lambda e: e["busy"])
    assert busy["agent"] == "fake" and busy["agent_name"] == "svc-fake-agent"
    assert busy["current_turn"] == "sleep 20"
    await chat.send(type="cancel", session_id=sid)
    await entry_where(lambda e: not e["busy"])
    stop_session(host, sid)
    async with asyncio.timeout(5):
        while any(e["session_id"] == sid for e in json.loads(await runtime.recv())):
            pass
    await runtime.close()
    await chat.close()


async def test_bad_messages_get_errors(host: Daemon, tmp_path: Path) -> None:
    chat = await Chat.connect(host)
    await chat.ws.send("not json")
    assert "JSON object" in (await chat.next("error"))["message"]
    await chat.send(type="open", agent="nope", workspace=str(tmp_path))
    assert "unknown agent" in (await chat.next("error"))["message"]
    await chat.send(type="open", agent="shell", workspace=str(tmp_path))
    assert "cannot run chat sessions" in (await chat.next("error"))["message"]
    terminal = create_session(host, tmp_path)
    await chat.send(type="open", session_id=terminal["id"])
    assert "open it on /ws" in (await chat.next("error"))["message"]
    stop_session(host, terminal["id"])
    await chat.send(type="prompt", session_id="00000000-0000-0000-0000-000000000000", text="x")
    assert "no live chat session" in (await chat.next("error"))["message"]
    await chat.close()


def test_chat_sessions_are_created_over_the_api_too(host: Daemon, tmp_path: Path) -> None:
    response = httpx.post(
        f"{host.url}/api/sessions",
        json={"agent": "fake", "workspace": str(tmp_path), "kind": "chat"},
        headers=host.owner_headers(),
        timeout=30,
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == "running" and body["agent_session_id"].startswith("fake-")
    assert body["pid"] and Path(f"/proc/{body['pid']}").exists()
    assert stop_session(host, body["id"]).json()["status"] == "exited"


async def test_an_ended_chat_resumes_the_agents_own_session(host: Daemon, tmp_path: Path) -> None:
    chat, sid = await open_chat(host, tmp_path)
    await chat.send(type="prompt", session_id=sid, text="echo before")
    await chat.next("turn_end")
    first = httpx.get(f"{host.url}/api/sessions/{sid}", headers=host.owner_headers()).json()
    stop_session(host, sid)
    await chat.next("session", status="exited")
    await chat.close()

    again = await Chat.connect(host)
    ready = await again.open(session_id=sid, resume=True)
    assert ready["status"] == "running" and ready["busy"] is False
    assert ready["agent_session_id"] == first["agent_session_id"]  # loaded, not new
    assert "before" in again.texts()  # the history, replayed once from the database
    await again.send(type="prompt", session_id=sid, text="echo after")
    await again.next("turn_end")
    assert again.texts().endswith("after")
    row = httpx.get(f"{host.url}/api/sessions/{sid}", headers=host.owner_headers()).json()
    assert row["status"] == "running" and row["ended_at"] is None
    stop_session(host, sid)
    await again.close()


async def test_a_chat_session_is_not_a_terminal(host: Daemon, tmp_path: Path) -> None:
    chat, sid = await open_chat(host, tmp_path)
    ws = await open_ws(host, f"/ws?session_id={sid}")
    with pytest.raises(ConnectionClosed):
        await ws.recv()
    assert ws.close_code == 4404
    await chat.close()
    stop_session(host, sid)


async def test_a_reconnecting_client_can_answer_a_pending_permission(
    host: Daemon, tmp_path: Path
) -> None:
    chat, sid = await open_chat(host, tmp_path)
    await chat.send(type="prompt", session_id=sid, text="permission")
    asked = await chat.next("permission_request")
    await chat.close()  # the browser tab reloads
    again = await Chat.connect(host)
    await again.open(session_id=sid)
    live = await again.next("permission_request", request_id=asked["request_id"])
    assert "replay" not in live
    await again.send(type="permission", request_id=asked["request_id"], option_id="allow")
    await again.next("turn_end")
    assert again.texts().endswith("permission: allow")
    await again.close()
    stop_session(host, sid)
