"""A chat app's prompt to another fleet member's session (channels_app/remote_chat.py) counts as
handed over only once the owner says it has it: the owner's answer is returned, its refusal is
a DomainError with its words, and no answer — or the relay ending — is RemoteChatUnavailable
saying so. The socket is a stand-in for the relay (tests/e2e/test_fleet_chat_channel.py runs
the real one between two members)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from channels_app import remote_chat
from channels_app.remote_chat import RemoteChat, RemoteChatUnavailable
from core.errors import DomainError


class Socket:
    """The owner's /ws/chat as the relay carries it; `answer` says what it does with a prompt."""

    def __init__(self, answer: str) -> None:
        self.answer, self.sent = answer, []
        self.frames: asyncio.Queue[tuple[str, str] | None] = asyncio.Queue()

    async def send_text(self, text: str) -> None:
        message = json.loads(text)
        self.sent.append(message)
        if message["type"] == "open":
            self._say({"kind": "session", "session_id": "s1", "agent": "fake", "busy": False})
        elif message["type"] == "prompt":
            key = message["key"]
            if self.answer == "recorded":
                self._say({"kind": "prompt_received", "key": key, "again": False, "waiting": 2})
            elif self.answer == "refused":
                self._say({"kind": "error", "key": key, "message": "the agent has exited"})
            elif self.answer == "ends":
                self.frames.put_nowait(None)

    def _say(self, event: dict[str, Any]) -> None:
        self.frames.put_nowait(("text", json.dumps(event)))

    async def recv(self) -> tuple[str, str] | None:
        return await self.frames.get()

    async def close(self) -> None:
        self.frames.put_nowait(None)


class Fleet:
    def __init__(self, socket: Socket) -> None:
        self.socket = socket

    async def open_socket(self, machine: str, path: str, query: str, scope: Any) -> Socket:
        return self.socket

    def name_of(self, machine: str) -> str:
        return "b"


async def opened(answer: str) -> tuple[RemoteChat, Socket]:
    socket = Socket(answer)
    chat = RemoteChat(Fleet(socket), "m-b", "telegram")
    assert await chat.open(lambda event: None, session_id="s1") == "s1"
    return chat, socket


async def test_the_owners_answer_is_returned_and_the_prompt_carries_its_key() -> None:
    chat, socket = await opened("recorded")
    answer = await chat.prompt("hello", who="telegram chat 42", key="m-a:telegram:7")
    assert (answer["waiting"], answer["again"]) == (2, False)
    prompt = next(m for m in socket.sent if m["type"] == "prompt")
    assert prompt["key"] == "m-a:telegram:7" and prompt["session_id"] == "s1"
    assert prompt["as"] == {"surface": "telegram", "who": "telegram chat 42"}
    await chat.close()


async def test_the_owners_refusal_is_a_domain_error_in_its_words() -> None:
    chat, _ = await opened("refused")
    with pytest.raises(DomainError, match="the agent has exited"):
        await chat.prompt("hello", who="w", key="k1")
    await chat.close()


async def test_no_answer_says_the_owner_did_not_say_it_has_the_message(monkeypatch: Any) -> None:
    monkeypatch.setattr(remote_chat, "RECEIVED_TIMEOUT_S", 0.1)
    chat, _ = await opened("silent")
    with pytest.raises(RemoteChatUnavailable, match="machine b did not say it has the message"):
        await chat.prompt("hello", who="w", key="k2")
    assert chat._receipts == {}  # nothing left waiting
    await chat.close()


async def test_the_relay_ending_while_waiting_says_so() -> None:
    chat, _ = await opened("ends")
    with pytest.raises(RemoteChatUnavailable, match="the connection to machine b ended"):
        await chat.prompt("hello", who="w", key="k3")
    await chat.close()
