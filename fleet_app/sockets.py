"""A terminal or a chat on another member, opened from this one (contract §18 "Act anywhere").

The viewer's member opens a relay (fleet_app.relay_streams: Redis Streams, acknowledged reads, a
1 MiB window) and asks the owner, over the bus, to run its own WebSocket consumer on the other
end: the owner's `/ws` or `/ws/chat` consumer serves the relay as if it were a browser's socket,
so the terminal's scrollback, its backpressure (a viewer that stops reading is put in lagging and
told what it skipped, never holding the PTY back for long) and the chat's history and events are
the owner's own code. Nothing travels through the channel layer, which drops when full.

A close from the owner travels as a text frame of its own (CLOSE + the code): the relay carries
frames, and the WebSocket close code must reach the viewer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import Any

from channels.db import database_sync_to_async

from core.asgi_helpers import ASGIApp
from fleet_app import conf
from fleet_app.bus import Bus, FleetUnreachable
from fleet_app.inbound import caller_of, surface_of
from fleet_app.lists import FleetLists
from fleet_app.relay_streams import Relay, RelayClosed
from fleet_app.selectors import machine_list_dicts
from fleet_app.signing import Envelope

logger = logging.getLogger(__name__)

CLOSE = "\x00svc-close:"
OPEN_TIMEOUT_S = 10.0
SOCKET_PATHS = ("/ws", "/ws/chat")
Frame = tuple[str, Any]  # ("bytes", b"…") | ("text", "…") | ("close", code)


class RemoteSocket:
    """This member's end of a socket served by another member."""

    def __init__(self, relay: Relay, machine: str) -> None:
        self.relay, self.machine = relay, machine

    async def send_text(self, text: str) -> None:
        await self.relay.send("text", text)

    async def send_bytes(self, data: bytes) -> None:
        await self.relay.send("bytes", data)

    async def recv(self) -> Frame | None:
        """The next frame from the owner; None when the relay ended without a close (the owner
        or Redis went away: `relay.ended` says why)."""
        frame = await self.relay.recv()
        if frame is None:
            return None
        kind, data = frame
        if kind == "text" and isinstance(data, str) and data.startswith(CLOSE):
            return ("close", int(data[len(CLOSE) :] or 1000))
        return frame

    async def close(self) -> None:
        await self.relay.close()


class FleetSockets:
    def __init__(self, fleet: conf.FleetConfig, bus: Bus, lists: FleetLists, app: ASGIApp) -> None:
        self.fleet, self.bus, self.lists = fleet, bus, lists
        self._served: set[asyncio.Task[None]] = set()
        # The sessions' sockets (sessions_app.routing), the daemon's parts in their scope.
        self._app = app

    # --- the viewer's side ------------------------------------------------------------------------

    def session_owner(self, session_id: str) -> str | None:
        return self.lists.session_owner(session_id)

    async def resolve(self, given: str) -> str | None:
        """Another machine named by its id or name → its id; None for this one. LookupError
        when the fleet has no such machine, or two of that name."""
        wanted = given.strip()
        names = dict(self.lists.names)
        if wanted not in names and wanted.lower() not in {n.lower() for n in names.values()}:
            # Joined a moment ago: not yet in the heartbeat's last look.
            rows = await database_sync_to_async(machine_list_dicts)()
            names |= {row["id"]: row["name"] for row in rows}
            for machine, name in names.items():  # until the heartbeat's next look
                self.lists.names.setdefault(machine, name)
        matches = [wanted] if wanted in names or wanted == self.fleet.machine_id else []
        matches = matches or [m for m, n in names.items() if n.lower() == wanted.lower()]
        if len(matches) != 1:
            problem = "no machine" if not matches else f"{len(matches)} machines named"
            raise LookupError(f"{problem} {given!r} in this fleet: GET /api/machines lists them")
        return None if matches[0] == self.fleet.machine_id else matches[0]

    def name_of(self, machine: str) -> str:
        return self.lists.names.get(machine, machine[:8])

    async def open_socket(
        self, machine: str, path: str, query: str, scope: dict[str, Any]
    ) -> RemoteSocket:
        """Raises FleetUnreachable when the member cannot be asked or refuses."""
        if self.lists.status.get(machine) == "unreachable":
            raise FleetUnreachable(machine, "it has not renewed its row for 15 s")
        relay_id = secrets.token_hex(16)
        relay = await Relay.open(
            self.bus.redis,
            self.bus.prefix,
            relay_id,
            side="viewer",
            secret=self.fleet.secret,
            machine_id=self.fleet.machine_id,
        )
        remote = bool(scope.get("svc_remote"))
        body = {
            "relay": relay_id,
            "path": path,
            "query": query,
            "surface": "remote" if remote else "main",
            "device": str(scope.get("svc_device") or "") if remote else "",
            "device_name": str(scope.get("svc_device_name") or "") if remote else "",
            "caller_name": self.lists.own_name(),
        }
        try:
            answer = await self.bus.call(machine, "ws_open", body, timeout=OPEN_TIMEOUT_S)
        except FleetUnreachable:
            await relay.close()
            raise
        if not answer.get("ok"):
            await relay.close()
            problem = answer.get("error", {}).get("message") or "it refused"
            raise FleetUnreachable(machine, str(problem))
        return RemoteSocket(relay, machine)

    # --- the owner's side -------------------------------------------------------------------------

    async def serve(self, envelope: Envelope) -> dict[str, Any]:
        """Run this member's consumer for `path` on the relay the asking member opened."""
        body = envelope.body
        path, relay_id = str(body.get("path", "")), str(body.get("relay", ""))
        if path not in SOCKET_PATHS or not relay_id:
            return {"ok": False, "error": {"message": f"no socket {path!r} for the fleet"}}
        relay = await Relay.open(
            self.bus.redis,
            self.bus.prefix,
            relay_id,
            side="owner",
            secret=self.fleet.secret,
            machine_id=self.fleet.machine_id,
        )
        scope = socket_scope(path, str(body.get("query") or ""))
        scope |= surface_of(body, caller_of(envelope, self.lists.names))
        task = asyncio.create_task(self._run(scope, relay), name=f"fleet socket {relay_id}")
        self._served.add(task)
        task.add_done_callback(self._served.discard)
        return {"ok": True}

    async def _run(self, scope: dict[str, Any], relay: Relay) -> None:
        try:
            await self._app(scope, *relay_as_socket(relay))
        except Exception:
            logger.exception("fleet: a socket served for %s failed", scope["svc_fleet"]["machine"])
        finally:
            await relay.close()

    async def stop(self) -> None:
        for task in list(self._served):
            task.cancel()
        await asyncio.gather(*self._served, return_exceptions=True)


def socket_scope(path: str, query: str) -> dict[str, Any]:
    return {
        "type": "websocket",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "scheme": "ws",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode("latin-1"),
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
        "subprotocols": [],
    }


def relay_as_socket(relay: Relay) -> tuple[Any, Any]:
    """ASGI receive and send for a consumer whose client is at the other end of `relay`."""
    connected = False

    async def receive() -> dict[str, Any]:
        nonlocal connected
        if not connected:
            connected = True
            return {"type": "websocket.connect"}
        frame = await relay.recv()
        if frame is None:
            return {"type": "websocket.disconnect", "code": 1001}
        kind, data = frame
        return {"type": "websocket.receive", "bytes" if kind == "bytes" else "text": data}

    async def send(message: dict[str, Any]) -> None:
        kind = message["type"]
        with contextlib.suppress(RelayClosed):  # the viewer went: the consumer hears it next
            if kind == "websocket.send":
                if message.get("bytes") is not None:
                    await relay.send("bytes", message["bytes"])
                else:
                    await relay.send("text", message.get("text") or "")
            elif kind == "websocket.close":
                await relay.send("text", f"{CLOSE}{message.get('code', 1000)}")
                await relay.flush()

    return receive, send
