"""The WebSocket consumers in process, through the real ASGI router (Channels' communicator):
the terminal, chat and live-list sockets, and the guard in front of them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from core import config
from harness.runtime import scoped

pytestmark = pytest.mark.django_db(transaction=True)
FAKE_ACP = str(Path(__file__).resolve().parents[2] / "harness" / "fakes" / "acp_agent.py")


@pytest.fixture(autouse=True)
def fake_agent(settings: Any) -> None:
    config.write_settings({"agents": {"fake": {"acp_command": [sys.executable, FAKE_ACP]}}})


def app(parts: Any) -> Any:
    from svcproject.asgi import routed

    return scoped(routed, parts)


def socket(parts: Any, path: str) -> WebsocketCommunicator:
    token = config.current_auth().owner_token
    joiner = "&" if "?" in path else "?"
    return WebsocketCommunicator(app(parts), f"{path}{joiner}token={token}")


async def create(parts: Any, tmp_path: Path, **fields: Any) -> Any:
    from sessions_app import services

    return await database_sync_to_async(services.session_create)(
        host=parts.host, workspace=str(tmp_path), **{"agent": "shell", **fields}
    )


async def stop(parts: Any, session_id: str) -> None:
    from sessions_app import services

    await database_sync_to_async(services.session_stop)(host=parts.host, session_id=session_id)


async def receive_until(ws: WebsocketCommunicator, needle: bytes, limit: int = 500) -> bytes:
    seen = b""
    for _ in range(limit):
        message = await ws.receive_output(timeout=10)
        seen += message.get("bytes") or b""
        if needle in seen:
            return seen
    raise AssertionError(f"{needle!r} never came; saw {seen[-200:]!r}")


async def test_a_terminal_viewer_gets_scrollback_state_and_live_output(
    tmp_path: Path, parts: Any
) -> None:
    session = await create(parts, tmp_path)
    ws = socket(parts, f"/ws?session_id={session.id}")
    connected, _ = await ws.connect()
    assert connected
    first = await ws.receive_output(timeout=10)
    assert isinstance(first.get("bytes"), bytes)
    assert json.loads(await ws.receive_from(timeout=10)) == {"type": "running"}
    await ws.send_to(text_data=json.dumps({"type": "resize", "cols": 91, "rows": 33}))
    await ws.send_to(text_data=json.dumps({"type": "resize", "cols": 0, "rows": 0}))
    await ws.send_to(bytes_data=b"stty size; echo comm-$((6*7))\r")
    seen = await receive_until(ws, b"comm-42")
    assert b"33 91" in seen
    assert b"resize" not in seen  # a resize to 0x0 is dropped, not typed into the shell
    await ws.disconnect()
    await stop(parts, str(session.id))


async def test_an_unknown_terminal_closes_with_4404(parts: Any) -> None:
    ws = socket(parts, "/ws?session_id=00000000-0000-0000-0000-000000000000")
    connected, _ = await ws.connect()
    assert connected
    assert (await ws.receive_output(timeout=10))["code"] == 4404


async def test_a_chat_replays_then_streams_the_agents_answer(tmp_path: Path, parts: Any) -> None:
    session = await create(parts, tmp_path, agent="fake", kind="chat")
    ws = socket(parts, "/ws/chat")
    await ws.connect()
    await ws.send_json_to({"type": "open", "session_id": str(session.id)})
    opened = await ws.receive_json_from(timeout=10)
    assert opened["kind"] == "session" and opened["status"] == "running"
    await ws.send_json_to(
        {"type": "prompt", "session_id": str(session.id), "text": "echo hi there"}
    )
    events: list[dict[str, Any]] = []
    while not events or events[-1]["kind"] != "turn_end":
        events.append(await ws.receive_json_from(timeout=10))
    said = "".join(e.get("text", "") for e in events if e["kind"] == "agent_message_chunk")
    assert said.split() == ["hi", "there"] and events[-1]["stop_reason"] == "end_turn"
    await ws.disconnect()
    again = socket(parts, "/ws/chat")  # a second client: the history first, marked as replay
    await again.connect()
    await again.send_json_to({"type": "open", "session_id": str(session.id)})
    replayed = []
    while not replayed or replayed[-1]["kind"] != "session":
        replayed.append(await again.receive_json_from(timeout=10))
    assert [e["kind"] for e in replayed if e.get("replay")][-1] == "turn_end"
    await again.disconnect()
    await stop(parts, str(session.id))


async def test_a_malformed_chat_event_is_an_error_event_not_a_dead_socket(parts: Any) -> None:
    ws = socket(parts, "/ws/chat")
    await ws.connect()
    await ws.send_to(text_data="not json")
    assert (await ws.receive_json_from(timeout=10))["kind"] == "error"
    await ws.send_json_to({"type": "prompt", "session_id": "nope", "text": "x"})
    assert (await ws.receive_json_from(timeout=10))["kind"] == "error"
    await ws.disconnect()


async def test_the_sessions_list_sends_a_full_snapshot_on_connect_and_on_change(
    tmp_path: Path,
    parts: Any,
) -> None:
    ws = socket(parts, "/ws/sessions")
    await ws.connect()
    assert json.loads(await ws.receive_from(timeout=10)) == []
    session = await create(parts, tmp_path)
    for _ in range(20):
        items = json.loads(await ws.receive_from(timeout=10))
        if any(s["id"] == str(session.id) for s in items):
            break
    else:
        raise AssertionError("the new session never showed in the list")
    await ws.disconnect()
    await stop(parts, str(session.id))


@pytest.mark.parametrize("path", ["/ws/channels", "/ws/tunnels", "/ws/agents/runtime"])
async def test_every_list_socket_sends_a_list(path: str, parts: Any) -> None:
    ws = socket(parts, path)
    await ws.connect()
    assert isinstance(json.loads(await ws.receive_from(timeout=10)), list)
    await ws.disconnect()


async def test_the_guard_closes_a_socket_without_the_owner_token(parts: Any) -> None:
    ws = WebsocketCommunicator(app(parts), "/ws/sessions?token=wrong")
    connected, _ = await ws.connect()
    assert connected
    assert (await ws.receive_output(timeout=10))["code"] == 4401
