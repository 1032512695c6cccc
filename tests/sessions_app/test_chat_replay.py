"""The chat replay rule (host/acp.py): a client that opens a chat while the agent is talking
gets every event exactly once — history first, then live — with no process involved."""

from __future__ import annotations

from typing import Any

from sessions_app.host.acp import AcpSession
from sessions_app.host.activity import Activity


def chat_with_memory() -> tuple[AcpSession, list[dict[str, Any]]]:
    stored: list[dict[str, Any]] = []

    async def store(session_id: str, kind: str, payload: dict[str, Any], src: int | None) -> int:
        stored.append({**payload, "kind": kind, "session_id": session_id, "seq": len(stored) + 1})
        return len(stored)

    async def on_exit(session_id: str, code: int) -> None:
        pass

    chat = AcpSession("s1", "fake", store=store, on_exit=on_exit, activity=Activity())
    return chat, stored


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events if e.get("kind") == "agent_message_chunk"]


async def test_an_event_stored_while_the_history_is_read_arrives_once() -> None:
    chat, stored = chat_with_memory()
    await chat.emit("agent_message_chunk", {"text": "one"})

    async def history() -> list[dict[str, Any]]:
        # The agent speaks while the client reads the history: the event is stored (so the
        # read sees it) and delivered live to the new subscription too.
        await chat.emit("agent_message_chunk", {"text": "two"})
        return list(stored)

    live: list[dict[str, Any]] = []
    subscription = await chat.subscribe(live.append, history)
    await chat.emit("agent_message_chunk", {"text": "three"})  # after the read, before start
    replayed = subscription.replay
    assert all(e["replay"] for e in replayed)
    subscription.start()
    await chat.emit("agent_message_chunk", {"text": "four"})
    assert texts(replayed) + texts(live) == ["one", "two", "three", "four"]


async def test_a_client_without_history_gets_only_live_events() -> None:
    chat, _ = chat_with_memory()
    await chat.emit("agent_message_chunk", {"text": "before"})
    live: list[dict[str, Any]] = []
    subscription = await chat.subscribe(live.append)
    subscription.start()
    await chat.emit("agent_message_chunk", {"text": "after"})
    subscription.close()
    await chat.emit("agent_message_chunk", {"text": "unsubscribed"})
    assert subscription.replay == [] and texts(live) == ["after"]


async def test_a_client_reopening_after_what_it_has_gets_the_rest_once() -> None:
    """A page back on a new socket (svc restarted) opens its chat `after` the last seq it saw:
    it gets what came since, stored or live, and nothing it already has."""
    chat, stored = chat_with_memory()
    for word in ("one", "two"):
        await chat.emit("agent_message_chunk", {"text": word})
    seen = stored[-1]["seq"]
    await chat.emit("agent_message_chunk", {"text": "three"})  # while the page was away

    async def history() -> list[dict[str, Any]]:
        await chat.emit("agent_message_chunk", {"text": "four"})  # while the history is read
        return [e for e in stored if e["seq"] > seen]

    live: list[dict[str, Any]] = []
    subscription = await chat.subscribe(live.append, history, after=seen)
    subscription.start()
    await chat.emit("agent_message_chunk", {"text": "five"})
    assert texts(subscription.replay) + texts(live) == ["three", "four", "five"]
