"""Terminals and chats of another fleet member on this member's sockets (contract §18 "Act
anywhere"). The fleet (fleet_app.sockets, added to the runtime as `fleet_sockets`) opens a socket
served by the owning member; these classes join it to the browser's socket here: frames pass
through as they are, in both directions, and this side reads from the owner only as fast as the
browser takes what it sent (the server's flow), so a slow browser slows the relay, and the
owner's terminal puts it in lagging rather than holding its PTY back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from core import server_compat, untrusted_json
from sessions_app.host.pty import SCROLLBACK_BYTES

logger = logging.getLogger(__name__)

# Another member's chat event: signed, so trusted, and still never a reason for the pump to die.
MAX_FRAME = 64 * 1024 * 1024
CLOSE_UNREACHABLE = 4503  # the owning member could not be reached, or went away


class Socket(Protocol):
    async def send_text(self, text: str) -> None: ...
    async def send_bytes(self, data: bytes) -> None: ...
    async def recv(self) -> tuple[str, Any] | None: ...
    async def close(self) -> None: ...


class Fleet(Protocol):
    def session_owner(self, session_id: str) -> str | None: ...
    async def resolve(self, given: str) -> str | None: ...
    def name_of(self, machine: str) -> str: ...
    async def open_socket(
        self, machine: str, path: str, query: str, scope: dict[str, Any]
    ) -> Socket: ...


class RemoteTerminal:
    """`/ws?session_id=` for a terminal another member hosts."""

    def __init__(self, consumer: Any, fleet: Fleet, machine: str) -> None:
        self.consumer, self.fleet, self.machine = consumer, fleet, machine
        self.socket: Socket | None = None
        self._pump: asyncio.Task[None] | None = None

    async def open(self, session_id: str) -> None:
        try:
            self.socket = await self.fleet.open_socket(
                self.machine, "/ws", f"session_id={session_id}", self.consumer.scope
            )
        except Exception as exc:
            await self._unreachable(exc)
            return
        base_send = self.consumer.base_send
        server_compat.allow_messages_up_to(base_send, SCROLLBACK_BYTES + 4096)
        flow = server_compat.socket_flow(base_send)
        self._pump = asyncio.create_task(self._relay_down(flow))

    async def _relay_down(self, flow: Any) -> None:
        assert self.socket is not None
        while (frame := await self.socket.recv()) is not None:
            kind, data = frame
            if kind == "close":
                await self.consumer.close(data)
                return
            await flow.wait_writable()
            if kind == "bytes":
                await self.consumer._send_bytes(data)
            else:
                await self.consumer.send(text_data=data)
        await self._unreachable(ConnectionError("the relay ended"))

    async def _unreachable(self, exc: BaseException) -> None:
        name = self.fleet.name_of(self.machine)
        message = f"machine {name} cannot be reached: {exc}"
        await self.consumer.send(text_data=json.dumps({"type": "error", "message": message}))
        await self.consumer.close(CLOSE_UNREACHABLE)

    async def forward(self, text: str | None, data: bytes | None) -> None:
        if self.socket is None:
            return
        with contextlib.suppress(Exception):  # the pump says when the relay is gone
            if data is not None:
                await self.socket.send_bytes(data)
            elif text is not None:
                await self.socket.send_text(text)

    async def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
        if self.socket is not None:
            await self.socket.close()


class RemoteChats:
    """The `/ws/chat` sessions of other members on one chat socket here: one socket per member
    that holds any of them; their events go into this socket's outbox as they come."""

    def __init__(self, scope: dict[str, Any], fleet: Fleet, put: Callable[[dict], None]) -> None:
        self.scope, self.fleet, self.put = scope, fleet, put
        self.owner: dict[str, str] = {}  # session id → member
        self._sockets: dict[str, Socket] = {}
        self._pumps: list[asyncio.Task[None]] = []

    async def machine_for(self, message: dict[str, Any]) -> str | None:
        """The member a client message is for, when it is another one (LookupError: it names
        a machine the fleet does not have)."""
        session_id = str(message.get("session_id") or "")
        if session_id in self.owner:
            return self.owner[session_id]
        if message.get("type") == "open" and not session_id and message.get("machine"):
            return await self.fleet.resolve(str(message["machine"]))
        return self.fleet.session_owner(session_id) if session_id else None

    @property
    def machines(self) -> list[str]:
        return list(self._sockets)

    async def send(self, machine: str, message: dict[str, Any]) -> None:
        # `as` is for a member's chat channel to say whose message it passes on: a browser's
        # message must not claim to be someone on Telegram; nor use a key, kept there under
        # this member as its chat channels' are (sessions_app/consumers_chat.py).
        message = {k: v for k, v in message.items() if k not in ("machine", "as", "key")}
        if (session_id := message.get("session_id")) is not None:
            self.owner[str(session_id)] = machine
        try:
            socket = await self._socket(machine)
            await socket.send_text(json.dumps(message))
        except Exception as exc:
            self._sockets.pop(machine, None)
            name = self.fleet.name_of(machine)
            self.put(
                {
                    "kind": "error",
                    "session_id": session_id,
                    "message": f"machine {name} cannot be reached: {exc}",
                }
            )

    async def _socket(self, machine: str) -> Socket:
        if machine not in self._sockets:
            socket = await self.fleet.open_socket(machine, "/ws/chat", "", self.scope)
            self._sockets[machine] = socket
            self._pumps.append(asyncio.create_task(self._relay_down(machine, socket)))
        return self._sockets[machine]

    async def _relay_down(self, machine: str, socket: Socket) -> None:
        while (frame := await socket.recv()) is not None and frame[0] == "text":
            try:
                event = untrusted_json.loads(frame[1], max_bytes=MAX_FRAME)
            except ValueError:
                continue
            if isinstance(event, dict):
                if event.get("session_id"):
                    self.owner[str(event["session_id"])] = machine
                self.put(event)
        if self._sockets.get(machine) is socket:
            del self._sockets[machine]
            name = self.fleet.name_of(machine)
            for session_id in [s for s, m in self.owner.items() if m == machine]:
                self.put(
                    {
                        "kind": "error",
                        "session_id": session_id,
                        "message": f"the connection to machine {name} was lost; open the "
                        "session again once it is back",
                    }
                )

    async def close(self) -> None:
        for pump in self._pumps:
            pump.cancel()
        for socket in list(self._sockets.values()):
            with contextlib.suppress(Exception):
                await socket.close()
        self._sockets.clear()
