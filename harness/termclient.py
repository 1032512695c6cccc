"""Client helpers for the terminal and chat end-to-end tests: real HTTP and WebSocket clients."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from harness.daemon import ROOT, Daemon

FAKE_ACP = str(ROOT / "harness" / "fakes" / "acp_agent.py")


def hosting_settings() -> dict[str, Any]:
    """A profile (for the bridge variables) and the fake ACP agent."""
    return {
        "profiles": {
            "p1": {
                "provider": "openai-chat",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "sk-test",
                "models": ["m1"],
            }
        },
        "agents": {
            "fake": {
                "command": [sys.executable, FAKE_ACP],
                "acp_command": [sys.executable, FAKE_ACP],
                "enabled": True,
            }
        },
    }


def create_session(daemon: Daemon, workspace: Path | str, **body: Any) -> dict[str, Any]:
    payload = {"agent": "shell", "workspace": str(workspace), "kind": "terminal", **body}
    response = httpx.post(
        f"{daemon.url}/api/sessions", json=payload, headers=daemon.owner_headers(), timeout=30
    )
    assert response.status_code == 201, response.text
    return response.json()


def get_session(daemon: Daemon, session_id: str) -> dict[str, Any]:
    response = httpx.get(f"{daemon.url}/api/sessions/{session_id}", headers=daemon.owner_headers())
    assert response.status_code == 200, response.text
    return response.json()


def stop_session(daemon: Daemon, session_id: str, wait: bool = True) -> httpx.Response:
    """DELETE the session; with `wait` the answer comes once the row is `exited`."""
    return httpx.delete(
        f"{daemon.url}/api/sessions/{session_id}",
        params={"wait": "1"} if wait else {},
        headers=daemon.owner_headers(),
        timeout=30,
    )


async def open_ws(daemon: Daemon, path: str, **kwargs: Any) -> ClientConnection:
    return await connect(
        f"{daemon.ws_url}{path}",
        origin=daemon.origin,  # type: ignore[arg-type]
        additional_headers=daemon.owner_headers(),
        max_size=None,
        **kwargs,
    )


class Term:
    """One viewer: the scrollback frame, the state frame, then everything it has read."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.out = bytearray()
        self.events: list[dict[str, Any]] = []
        self.scrollback = b""
        self.state: dict[str, Any] = {}

    @classmethod
    async def open(cls, daemon: Daemon, session_id: str, **kwargs: Any) -> Term:
        term = cls(await open_ws(daemon, f"/ws?session_id={session_id}", **kwargs))
        first = await asyncio.wait_for(term.ws.recv(), 10)
        assert isinstance(first, bytes), f"first frame must be the scrollback, got {first!r}"
        term.scrollback = first
        term.state = json.loads(await asyncio.wait_for(term.ws.recv(), 10))
        return term

    async def read_frame(self, timeout: float = 10) -> None:
        frame = await asyncio.wait_for(self.ws.recv(), timeout)
        if isinstance(frame, bytes):
            self.out += frame
        else:
            self.events.append(json.loads(frame))

    async def expect(self, needle: bytes, timeout: float = 10) -> int:
        """Read until `needle` appears in the output; returns where it ends."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while needle not in self.out:
            remaining = deadline - loop.time()
            assert remaining > 0, f"{needle!r} not seen; tail: {bytes(self.out[-300:])!r}"
            await self.read_frame(remaining)
        return self.out.index(needle) + len(needle)

    async def expect_event(self, kind: str, timeout: float = 10) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for event in self.events:
                if event.get("type") == kind:
                    return event
            remaining = deadline - loop.time()
            assert remaining > 0, f"no {kind} event; events: {self.events}"
            await self.read_frame(remaining)

    async def run(self, command: str) -> None:
        await self.ws.send(command.encode() + b"\r")

    async def close(self) -> None:
        await close_unread(self.ws)


async def close_unread(ws: ClientConnection) -> None:
    """Close, reading and dropping what the test did not read meanwhile: a client that stops
    reading stops taking frames, the server's close frame among them, and its close would wait
    out the 10 s close timeout."""

    async def drop_the_rest() -> None:
        with contextlib.suppress(Exception):
            async for _ in ws:
                pass

    dropping = asyncio.create_task(drop_the_rest())
    await ws.close()
    dropping.cancel()


def shell_env(tmp: Path) -> dict[str, str]:
    """Hosted shells get their own HOME: the developer's ~/.bashrc (pyenv rehash and friends) must
    not slow tests down, and a shell killed mid-rehash must not leave a lock in the real HOME."""
    home = tmp / "user-home"
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "SHELL": "/bin/bash"}


def start_hosting_daemon(
    tmp: Path, env: dict[str, str] | None = None, wrapper: tuple[str, ...] = ()
) -> Daemon:
    from harness.daemon import migrated_home

    home = migrated_home(tmp, hosting_settings())
    return Daemon(home, env={**shell_env(tmp), **(env or {})}, wrapper=wrapper).start()


class Chat:
    """A /ws/chat client that keeps every event it has read."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self.queued: list[dict[str, Any]] = []
        self.cursor = 0

    @classmethod
    async def connect(cls, daemon: Daemon) -> Chat:
        return cls(await open_ws(daemon, "/ws/chat"))

    async def send(self, **message: Any) -> None:
        await self.ws.send(json.dumps(message))

    async def next(self, kind: str, timeout: float = 10, **match: Any) -> dict[str, Any]:
        """The next event of `kind` (after the previous match) whose fields equal `match`."""
        async with asyncio.timeout(timeout):
            while True:
                while self.cursor < len(self.events):
                    event = self.events[self.cursor]
                    self.cursor += 1
                    if event["kind"] == kind and all(event.get(k) == v for k, v in match.items()):
                        return event
                self._add(json.loads(await self.ws.recv()))

    def _add(self, event: dict[str, Any]) -> None:
        """Keep an event. A `queue_change` is applied to the queue last known, as a client does,
        and that queue is kept after it as a `queue` event (`applied: true`): tests wait for what
        waits, whichever way svc said it."""
        self.events.append(event)
        if event["kind"] == "queue":
            self.queued = list(event["items"])
        elif event["kind"] == "queue_change":
            known = {i["id"]: i for i in self.queued} | {i["id"]: i for i in event["added"]}
            self.queued = [known[i] for i in event["order"] if i in known]
            self.events.append({**event, "kind": "queue", "items": self.queued, "applied": True})

    def texts(self, kind: str = "agent_message_chunk") -> str:
        return "".join(e.get("text", "") for e in self.events if e["kind"] == kind)

    async def open(self, timeout: float = 10, **fields: Any) -> dict[str, Any]:
        await self.send(type="open", **fields)
        return await self.next("session", timeout=timeout)

    async def close(self) -> None:
        await close_unread(self.ws)
