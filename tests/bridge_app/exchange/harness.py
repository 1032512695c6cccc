"""The harness for the in-process exchange tests (bridge_app/exchange.py): the fake provider on a
loopback port, profiles pointing at it (and at a closed port), the runtime's upstream client, and
helpers that build a `Route` and read a `Reply`. The fixtures are in this folder's conftest.py."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

from bridge_app import exchange, routes
from bridge_app.streams import SSEParser
from harness.fakes.fake_provider import FakeProvider, Recorded

ALIAS = "client-model"  # what clients ask for; the profiles map it to the fake's "fake-model"
PROFILE = {
    "openai-chat": "chat",
    "openai-responses": "responses",
    "anthropic": "claude",
    "gemini": "gemini",
}


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def profiles_for(fake: FakeProvider) -> dict[str, Any]:
    profiles = {
        name: {
            "provider": dialect,
            "base_url": fake.base_url(dialect),
            "api_key": f"profile-key-{dialect}",
            "models": ["fake-model"],
            "model_aliases": {ALIAS: "fake-model"},
        }
        for dialect, name in PROFILE.items()
    }
    down = f"http://127.0.0.1:{closed_port()}"
    profiles["noimg"] = {**profiles["chat"], "capabilities": {"image_input": False}}
    profiles["down"] = {**profiles["chat"], "base_url": f"{down}/v1"}
    profiles["claude-down"] = {**profiles["claude"], "base_url": down}
    return profiles


def route(
    client: str,
    profile: str | None = None,
    *,
    stream: bool = False,
    sse: bool = True,
    tail: str = "",
) -> routes.Route:
    profile = profile or PROFILE[client]
    base = f"/svc/local-api/{profile}/tests/{client}"
    query = b""
    if not tail:
        tail = {
            "openai-chat": "v1/chat/completions",
            "openai-responses": "v1/responses",
            "anthropic": "v1/messages",
        }.get(client, "")
    if client == "gemini" and not tail:
        method = "streamGenerateContent" if stream else "generateContent"
        tail, query = f"v1beta/models/{ALIAS}:{method}", b"alt=sse" if sse else b""
    parsed = routes.parse(f"{base}/{tail}", query)
    assert parsed is not None
    return parsed


def body_for(client: str, text: str, stream: bool = False, **extra: Any) -> dict[str, Any]:
    """A minimal request in the client's dialect (Gemini's stream flag is its URL)."""
    if client == "gemini":
        return {"contents": [{"role": "user", "parts": [{"text": text}]}], **extra}
    flag = {"stream": True} if stream else {}
    if client == "openai-responses":
        return {"model": ALIAS, "input": text, **flag, **extra}
    body = {"model": ALIAS, "messages": [{"role": "user", "content": text}], **flag, **extra}
    return {"max_tokens": 50, **body} if client == "anthropic" else body


async def generate(
    bridge_parts: exchange.Parts,
    r: routes.Route,
    body: dict[str, Any],
    log: dict[str, Any] | None = None,
) -> exchange.Reply:
    return await exchange.generate(bridge_parts, r, exchange.Incoming(body, json.dumps(body)), log)


async def call(
    bridge_parts: exchange.Parts,
    client: str,
    text: str,
    profile: str | None = None,
    *,
    stream: bool = False,
    sse: bool = True,
    **extra: Any,
) -> exchange.Reply:
    r = route(client, profile, stream=stream, sse=sse)
    return await generate(bridge_parts, r, body_for(client, text, stream, **extra))


async def read(reply: exchange.Reply) -> bytes:
    assert reply.chunks is not None, "not a stream"
    return b"".join([chunk async for chunk in reply.chunks])


def whole(reply: exchange.Reply) -> Any:
    assert reply.chunks is None, "a stream"
    return json.loads(reply.body) if isinstance(reply.body, bytes) else reply.body


def frames(raw: bytes) -> list[tuple[str, Any]]:
    return [(e, json.loads(d)) for e, d in SSEParser().feed(raw) if d != "[DONE]"]


def sent(fake: FakeProvider, marker: str) -> list[Recorded]:
    return [rec for rec in fake.requests if marker in json.dumps(rec.body)]


async def closed(fake: FakeProvider, marker: str, timeout: float = 5.0) -> Recorded:
    """The provider's record of the request once the connection to it ended (or the deadline)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rec = fake.last(marker)
        if rec.closed_at is not None or rec.finished:
            return rec
        await asyncio.sleep(0.01)
    return fake.last(marker)


async def recorded(fake: FakeProvider, marker: str, timeout: float = 5.0) -> Recorded:
    deadline = time.monotonic() + timeout
    while not sent(fake, marker):
        assert time.monotonic() < deadline, f"the provider never got {marker!r}"
        await asyncio.sleep(0.01)
    return fake.last(marker)
