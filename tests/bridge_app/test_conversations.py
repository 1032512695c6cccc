"""Agent-as-API conversations in process (bridge_app/conversations.py, contract §6): a started
runtime, the scripted ACP agent as agent "fake", and the runtime's own `Conversations` — which
session answers which request, one-shot ends, Responses ids, the per-key lock, and the idle/TTL
sweep."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from bridge_app import ir, routes
from bridge_app.conversations import Conversation
from harness.runtime import running, settings_file
from harness.termclient import hosting_settings
from sessions_app import selectors
from sessions_app.models import Session
from svcproject.parts import Parts

pytestmark = pytest.mark.django_db(transaction=True)

CHAT = routes.parse("/svc/local-agent/fake/p1/v1/chat/completions", b"")
RESPONSES = routes.parse("/svc/local-agent/fake/p1/v1/responses", b"")


@pytest.fixture
def fake_agent() -> Iterator[None]:
    """settings.json declares profile p1 and the fake agent; the worker's own file comes back."""
    with settings_file(hosting_settings()):
        yield


@pytest.fixture
async def rt(fake_agent: None) -> AsyncIterator[Parts]:
    async with running() as runtime:
        yield runtime


def named(key: str) -> dict[str, str]:
    return {"x-svc-conversation": key}


async def slot(
    rt: Parts,
    workspace: Path,
    route: Any = CHAT,
    body: dict | None = None,
    headers: dict[str, str] | None = None,
) -> Conversation:
    async with rt.conversations.turn_slot(route, body or {}, headers or {}, str(workspace)) as c:
        return c


async def say(conversation: Conversation, text: str) -> str:
    """One turn on the conversation's agent, as agent_api.Turn drives it; what the agent said."""
    chat = conversation.chat()
    events: list[dict[str, Any]] = []
    subscription = await chat.subscribe(events.append)
    subscription.start()
    try:
        prompt = asyncio.ensure_future(chat.prompt(text))
        conversation.running = prompt
        conversation.seen = True
        assert await asyncio.wait_for(prompt, 10) == "end_turn"
    finally:
        subscription.close()
    await conversation.turn_ended(prompt)
    return "".join(e.get("text", "") for e in events if e["kind"] == "agent_message_chunk")


async def session(session_id: str) -> Session:
    found = await sync_to_async(selectors.session_get)(session_id)
    assert found is not None, session_id
    return found


async def api_sessions() -> int:
    return await Session.objects.filter(kind="api").acount()


async def until(condition: Any, limit: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + limit
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_a_named_conversation_keeps_one_agent_session_across_requests(
    rt: Parts, tmp_path: Path
) -> None:
    first = await slot(rt, tmp_path, headers=named("chat-1"))
    assert await say(first, "echo one two") == "one two"
    second = await slot(rt, tmp_path, headers=named("chat-1"))
    assert second is first and second.session_id == first.session_id
    # The same agent process and the same ACP session: it remembers the first prompt.
    assert json.loads(await say(second, "prompts")) == ["echo one two", "prompts"]
    row = await session(first.session_id)
    assert (row.kind, row.agent, row.profile_id, row.status) == ("api", "fake", "p1", "running")
    assert row.workspace == str(tmp_path.resolve())
    assert rt.host.chat(first.session_id) is not None  # a named conversation outlives its turn
    # Another key, or the same key for another agent profile, is another conversation.
    other = await slot(rt, tmp_path, headers=named("chat-2"))
    assert other.session_id != first.session_id
    assert await api_sessions() == 2


async def test_without_a_key_a_request_is_one_shot_and_its_process_ends_with_the_turn(
    rt: Parts, tmp_path: Path
) -> None:
    once = await slot(rt, tmp_path)
    assert once.key is None
    chat = once.chat()
    assert await say(once, "echo only once") == "only once"  # turn_ended stops it
    await asyncio.wait_for(chat.exited.wait(), 10)
    assert rt.host.chat(once.session_id) is None
    await until(lambda: _status(once.session_id, "exited"))
    # The next one starts afresh (nothing was kept); a Responses request with store: false is
    # one-shot too.
    unstored = await slot(rt, tmp_path, RESPONSES, {"store": False})
    assert unstored.key is None and unstored.session_id != once.session_id


async def _status(session_id: str, status: str) -> bool:
    return (await session(session_id)).status == status


async def test_an_unknown_previous_response_id_is_a_404(rt: Parts, tmp_path: Path) -> None:
    body = {"previous_response_id": "resp_nope"}
    with pytest.raises(ir.BridgeError) as err:
        await slot(rt, tmp_path, RESPONSES, body)
    assert err.value.status == 404
    assert "resp_nope" in err.value.message
    assert await api_sessions() == 0  # refused before any agent started


async def test_a_remembered_response_id_continues_its_conversation(
    rt: Parts, tmp_path: Path
) -> None:
    body: dict[str, Any] = {"input": "hi"}  # `store` not false: it may be continued
    first = await slot(rt, tmp_path, RESPONSES, body)
    assert first.key is not None and first.key[0].startswith("response:")
    await say(first, "echo remembered")
    rt.conversations.remember_response("resp_1", first, body)
    follow = await slot(rt, tmp_path, RESPONSES, {"previous_response_id": "resp_1"})
    assert follow is first
    rt.conversations.remember_response("resp_2", follow, body)
    chained = await slot(rt, tmp_path, RESPONSES, {"previous_response_id": "resp_2"})
    assert chained.session_id == first.session_id
    assert await api_sessions() == 1
    # A one-shot conversation's answer cannot be continued: its id is not remembered.
    once = await slot(rt, tmp_path)
    rt.conversations.remember_response("resp_once", once, {})
    with pytest.raises(ir.BridgeError) as err:
        await slot(rt, tmp_path, RESPONSES, {"previous_response_id": "resp_once"})
    assert err.value.status == 404


async def test_two_requests_at_once_on_one_key_start_one_session(rt: Parts, tmp_path: Path) -> None:
    entered: list[str] = []

    async def request(tag: str) -> str:
        async with rt.conversations.turn_slot(CHAT, {}, named("busy"), str(tmp_path)) as c:
            entered.append(f"{tag} in")
            await asyncio.sleep(0.1)  # held until its turn has begun: the other one waits
            entered.append(f"{tag} out")
            return c.session_id

    a, b = await asyncio.gather(request("a"), request("b"))
    assert a == b
    assert await api_sessions() == 1
    assert entered in (["a in", "a out", "b in", "b out"], ["b in", "b out", "a in", "a out"])


async def test_the_sweep_stops_idle_agents_which_resume_and_forgets_old_conversations(
    rt: Parts, tmp_path: Path
) -> None:
    convs = rt.conversations
    talk = await slot(rt, tmp_path, headers=named("sweep"))
    await say(talk, "echo hello")
    first_pid = rt.host.chat(talk.session_id).pid
    agent_session = (await session(talk.session_id)).agent_session_id
    # Not yet idle: nothing happens.
    await convs.sweep(idle_s=10, ttl_s=100, now=talk.last_used + 5)
    assert rt.host.chat(talk.session_id) is not None and not talk.stopped
    # A turn still running is never swept, however old.
    busy = asyncio.get_running_loop().create_future()
    talk.running = busy
    await convs.sweep(idle_s=10, ttl_s=100, now=talk.last_used + 1000)
    assert rt.host.chat(talk.session_id) is not None
    busy.cancel()
    talk.running = None
    # Idle: the process is stopped, the conversation kept.
    chat = rt.host.chat(talk.session_id)
    await convs.sweep(idle_s=10, ttl_s=100, now=talk.last_used + 11)
    assert talk.stopped
    await asyncio.wait_for(chat.exited.wait(), 10)
    assert rt.host.chat(talk.session_id) is None
    await until(lambda: _status(talk.session_id, "exited"))
    # The next request resumes the same svc session and the agent's own ACP session.
    back = await slot(rt, tmp_path, headers=named("sweep"))
    assert back is talk and not back.stopped
    resumed = rt.host.chat(talk.session_id)
    assert resumed is not None and resumed.pid != first_pid
    row = await session(talk.session_id)
    assert row.status == "running" and row.agent_session_id == agent_session
    assert back.seen  # the agent loaded its session back: only the new tail is sent
    # Old: forgotten, its process stopped and its stored key dropped.
    await convs.sweep(idle_s=10, ttl_s=100, now=talk.last_used + 101)
    await asyncio.wait_for(resumed.exited.wait(), 10)
    assert rt.host.chat(talk.session_id) is None
    from bridge_app.models import Conversation as Stored

    assert not await Stored.objects.filter(key="sweep").aexists()
    fresh = await slot(rt, tmp_path, headers=named("sweep"))
    assert fresh.session_id != talk.session_id and not fresh.seen


async def test_a_named_conversation_resumes_after_a_restart(
    fake_agent: None, tmp_path: Path
) -> None:
    async with running() as first:
        before = await slot(first, tmp_path, headers=named("kept"))
        await say(before, "echo before the restart")
    async with running() as second:  # a new daemon: its conversations start empty
        await until(lambda: _status(before.session_id, "exited"))
        after = await slot(second, tmp_path, headers=named("kept"))
        assert after.session_id == before.session_id
        assert after.seen  # the agent loaded its own session: no need to resend the history
        assert second.host.chat(after.session_id) is not None
