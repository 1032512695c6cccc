"""Chats with the real agent CLIs hosted by a live svc, bound to profiles on the fake provider:
the settings that bind them, a turn over /ws/chat, and what the fake provider saw.

Shared by tests/e2e/test_real_agents*.py. The CLIs and their throw-away HOMEs are
harness/agents.py's.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from harness.daemon import Daemon
from harness.fakes.fake_provider import FakeProvider
from harness.termclient import Chat

MODEL = "fake-model"
# One profile per provider dialect, all on the fake: each agent's own dialect passes through.
PROFILES = {
    "fake-anthropic": "anthropic",
    "fake-gemini": "gemini",
    "fake-responses": "openai-responses",
    "fake-chat": "openai-chat",
}
# Each CLI on the profile of its own dialect.
OWN_PROFILE = {
    "claude": "fake-anthropic",
    "codex": "fake-responses",
    "gemini": "fake-gemini",
    "opencode": "fake-chat",
    "qwen": "fake-chat",
}


def settings(fake: FakeProvider, workspace: Path) -> dict[str, Any]:
    profiles = {
        pid: {
            "provider": dialect,
            "base_url": fake.base_url(dialect),
            "api_key": "k-fake",
            "models": [MODEL],
        }
        for pid, dialect in PROFILES.items()
    }
    return {"profiles": profiles, "workspaces": [str(workspace)]}


async def chat_turn(
    daemon: Daemon, workspace: Path, agent: str, profile: str, text: str
) -> tuple[Chat, str]:
    """Open a chat session of `agent` bound to `profile`, run one prompt (allowing whatever it
    asks), and return the chat with every event and the session id."""
    chat = await Chat.connect(daemon)
    # A real CLI may take long to start on a busy machine (OpenCode's took over 10 s once, with
    # the suite on both cores): svc itself gives an agent 60 s to answer `initialize`.
    ready = await chat.open(timeout=60, agent=agent, workspace=str(workspace), profile_id=profile)
    assert ready.get("status") == "running", ready
    sid = ready["session_id"]
    await run_turn(chat, sid, text)
    return chat, sid


async def run_turn(chat: Chat, sid: str, text: str, timeout: float = 120) -> list[dict[str, Any]]:
    """Send one prompt and read until its turn ends, allowing whatever the agent asks; returns
    the events of the turn."""
    start = chat.cursor
    await chat.send(type="prompt", session_id=sid, text=text)
    async with asyncio.timeout(timeout):
        while True:
            event = await next_event(chat)
            if event["kind"] == "permission_request":
                allow = [o for o in event["options"] if o["kind"].startswith("allow")]
                option = allow[0]["option_id"]
                await chat.send(type="permission", request_id=event["request_id"], option_id=option)
            if event["kind"] == "turn_end":
                return chat.events[start : chat.cursor]


async def next_event(chat: Chat) -> dict[str, Any]:
    if chat.cursor == len(chat.events):
        chat.events.append(json.loads(await chat.ws.recv()))
    chat.cursor += 1
    return chat.events[chat.cursor - 1]


def kinds(chat: Chat) -> list[str]:
    return [e.get("message") or e["kind"] for e in chat.events]


def requests_with(fake: FakeProvider, marker: str) -> list[Any]:
    return [r for r in fake.requests if marker in json.dumps(r.body)]


def through_bridge(request: Any) -> bool:
    """svc swapped the agent's dummy key for the profile's: the request came through the bridge."""
    headers = request.headers
    return "k-fake" in (
        headers.get("authorization", "")
        + headers.get("x-api-key", "")
        + headers.get("x-goog-api-key", "")
    )
