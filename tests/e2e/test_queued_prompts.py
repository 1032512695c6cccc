"""Prompts sent while a turn runs are queued (contract §17): shown to every client of the chat,
removable, sent in order once each when the turns before them end — across a SIGKILL of svc —
and "send now" cancels the running turn and sends the prompt next. Real daphne, /ws/chat over
real sockets, the scripted ACP agent (harness/fakes/acp_agent.py) held by the holder."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from harness.daemon import Daemon
from harness.termclient import Chat, create_session, hosting_settings


def start(daemon: Daemon) -> Daemon:
    (daemon.home / "settings.json").write_text(json.dumps(hosting_settings()))
    return daemon.start()


async def queue_of(chat: Chat, texts: list[str]) -> list[dict]:
    """The items of the next `queue` event that lists these prompts, in this order."""
    while True:
        event = await chat.next("queue", timeout=15)
        if [item["text"] for item in event["items"]] == texts:
            return event["items"]


async def stored(daemon: Daemon, session_id: str, turns: int) -> list[dict]:
    """The stored history once it holds `turns` turn ends (a client's replay)."""
    for _ in range(150):
        chat = await Chat.connect(daemon)
        await chat.open(session_id=session_id)
        try:
            while True:
                await chat.next("__none__", timeout=0.3)
        except TimeoutError:
            pass
        await chat.close()
        history = [e for e in chat.events if e.get("replay")]
        if [e["kind"] for e in history].count("turn_end") >= turns:
            return history
        await asyncio.sleep(0.2)
    raise AssertionError(f"fewer than {turns} turns ended: {[e['kind'] for e in history]}")


def prompts(history: list[dict]) -> list[str]:
    return [e["text"] for e in history if e["kind"] == "user_message_chunk"]


async def test_queued_prompts_run_in_order_once_each_across_a_sigkill(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    daemon = start(fresh_daemon)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat, other = await Chat.connect(daemon), await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    await other.open(session_id=session_id)
    await chat.send(type="prompt", session_id=session_id, text="count 30 50")
    await chat.next("agent_message_chunk", timeout=15)
    for text in ("echo first", "echo dropped", "echo second", "echo third"):
        await chat.send(type="prompt", session_id=session_id, text=text)
    waiting = ["echo first", "echo dropped", "echo second", "echo third"]
    items = await queue_of(other, waiting)  # the other client sees them too
    assert {i["source"] for i in items} == {"dashboard"}
    await other.send(type="unqueue", session_id=session_id, id=items[1]["id"])
    await queue_of(chat, ["echo first", "echo second", "echo third"])
    # Removing it again, or a prompt of no id, is a clear error that keeps the socket.
    await other.send(type="unqueue", session_id=session_id, id=items[1]["id"])
    assert "no queued prompt" in (await other.next("error"))["message"]
    await other.send(type="send_now", session_id=session_id, id="x")
    assert "`id` names a queued prompt" in (await other.next("error"))["message"]

    daemon.kill()  # mid-turn, three prompts waiting in svc's database
    await asyncio.sleep(0.3)
    daemon.start()
    again = await Chat.connect(daemon)
    await again.open(session_id=session_id)
    # What still waits is the end of the queue, in order (the chat may have gone on while svc
    # restarted: a turn that ended meanwhile sends the next ones as soon as svc takes it back).
    waits = [i["text"] for i in (await again.next("queue"))["items"]]
    assert waits == ["echo first", "echo second", "echo third"][3 - len(waits) :], waits
    history = await stored(daemon, session_id, turns=4)
    assert prompts(history) == ["count 30 50", "echo first", "echo second", "echo third"]
    said = "".join(e["text"] for e in history if e["kind"] == "agent_message_chunk")
    assert said.endswith("30 firstsecondthird"), said[-80:]
    assert [e["kind"] for e in history].count("turn_end") == 4
    # Nothing waits any more, and a chat opened now says so.
    await again.close()
    last = await Chat.connect(daemon)
    await last.open(session_id=session_id)
    assert (await last.next("queue", timeout=10))["items"] == []


async def test_send_now_cancels_the_running_turn_and_goes_before_the_others(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    daemon = start(fresh_daemon)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    await chat.send(type="prompt", session_id=session_id, text="count 400 50")
    await chat.next("agent_message_chunk", timeout=15)
    await chat.send(type="prompt", session_id=session_id, text="echo later")
    await chat.send(type="prompt", session_id=session_id, text="echo urgent")
    items = await queue_of(chat, ["echo later", "echo urgent"])
    await chat.send(type="send_now", session_id=session_id, id=items[1]["id"])
    ended = await chat.next("turn_end", timeout=15)
    assert ended["stop_reason"] == "cancelled"
    history = await stored(daemon, session_id, turns=3)
    assert prompts(history) == ["count 400 50", "echo urgent", "echo later"]
    said = "".join(e["text"] for e in history if e["kind"] == "agent_message_chunk")
    assert "400" not in said.split() and said.endswith("urgentlater"), said[-60:]


async def test_a_prompt_to_an_idle_chat_is_sent_at_once_and_never_shown_as_queued(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    daemon = start(fresh_daemon)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    assert (await chat.next("queue"))["items"] == []
    await chat.send(type="prompt", session_id=session_id, text="echo hello")
    await chat.next("turn_end", timeout=15)
    shown = [e["items"] for e in chat.events if e["kind"] == "queue"]
    assert all(items == [] for items in shown), shown
    assert chat.texts() == "hello"


async def test_prompts_queued_when_the_chat_was_stopped_are_sent_once_it_is_resumed(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    """Resumed through the API (a sync view that starts the agent inside its request): the
    prompt that waited is sent once the agent is back, though that request has ended by then."""
    daemon = start(fresh_daemon)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    await chat.send(type="prompt", session_id=session_id, text="count 400 50")
    await chat.next("agent_message_chunk", timeout=15)
    await chat.send(type="prompt", session_id=session_id, text="echo after-resume")
    await queue_of(chat, ["echo after-resume"])
    await chat.close()
    headers = daemon.owner_headers()
    async with httpx.AsyncClient(base_url=daemon.url, headers=headers, timeout=30) as api:
        assert (await api.delete(f"/api/sessions/{session_id}")).status_code == 202
        for _ in range(100):
            if (await api.get(f"/api/sessions/{session_id}")).json()["status"] != "running":
                break
            await asyncio.sleep(0.1)
        resumed = await api.post(f"/api/sessions/{session_id}/resume")
        assert resumed.status_code == 200, resumed.text
    history = await stored(daemon, session_id, turns=2)
    assert prompts(history) == ["count 400 50", "echo after-resume"]
    assert history[-1]["kind"] == "turn_end" and history[-1]["stop_reason"] == "end_turn"
    said = [e["text"] for e in history if e["kind"] == "agent_message_chunk"]
    assert said[-1] == "after-resume"


async def test_a_prompt_sent_again_under_its_key_is_recorded_and_sent_once(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    """What a fleet member that restarted before hearing back does: the same key again, while
    the first is queued and after it ran. Each is answered; the agent gets it once."""
    daemon = start(fresh_daemon)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    await chat.send(type="prompt", session_id=session_id, text="count 40 50")
    await chat.next("agent_message_chunk", timeout=15)
    keyed = {"type": "prompt", "session_id": session_id, "text": "echo once", "key": "m:tg:7"}
    await chat.send(**keyed)
    first = await chat.next("prompt_received", timeout=15)
    assert (first["key"], first["again"], first["waiting"]) == ("m:tg:7", False, 1)
    await chat.send(**keyed)  # queued still
    assert (await chat.next("prompt_received", timeout=15))["again"] is True
    await stored(daemon, session_id, turns=2)
    await chat.send(**keyed)  # sent and answered already
    assert (await chat.next("prompt_received", timeout=15))["again"] is True
    await chat.send(**(keyed | {"key": "k" * 201}))
    refused = await chat.next("error", timeout=15)
    assert "`key` is a string of at most 200" in refused["message"] and refused["key"]
    # Any refusal of a keyed prompt names its key: its client waits for one answer or the other.
    await chat.send(**(keyed | {"session_id": "no-such-session", "key": "k9"}))
    gone = await chat.next("error", timeout=15)
    assert gone["key"] == "k9" and "no live chat session" in gone["message"]
    await asyncio.sleep(0.5)  # time for a third turn, were one started
    history = await stored(daemon, session_id, turns=2)
    assert prompts(history) == ["count 40 50", "echo once"]
