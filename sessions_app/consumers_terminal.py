"""`/ws?session_id=<uuid>`: a viewer of a hosted terminal (contract §7).

Terminal bytes go straight from the host's per-viewer queue to this socket, never through the
channel layer (it drops messages when full); the server tells the host when this socket can take
more (core.server_compat.socket_flow).
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from core import server_compat, untrusted_json
from sessions_app import parts, selectors
from sessions_app.host.pty import SCROLLBACK_BYTES, TerminalView
from sessions_app.remote_sockets import RemoteTerminal

logger = logging.getLogger(__name__)

CLOSE_NOT_FOUND = 4404
MAX_RESIZE = 1024  # a resize message is ~40 characters: longer text is typed without parsing


def text_frame(text: str) -> bytes | tuple[int, int] | None:
    """What a client's text frame asks for: a (cols, rows) resize, bytes to type, or None — a
    resize message with a size no terminal has (a pty nobody sized sends 0x0), which is dropped
    rather than typed into the shell."""
    try:
        resize = text.startswith("{") and len(text) <= MAX_RESIZE
        message = untrusted_json.loads(text, max_bytes=MAX_RESIZE) if resize else None
    except ValueError:  # not JSON, or nested past the limit: typed like any other text
        message = None
    if not isinstance(message, dict) or message.get("type") != "resize":
        return text.encode()
    cols, rows = message.get("cols"), message.get("rows")
    if isinstance(cols, int) and isinstance(rows, int) and 1 <= cols <= 1000 and 1 <= rows <= 1000:
        return cols, rows
    return None


class TerminalConsumer(AsyncWebsocketConsumer):
    view: TerminalView | None = None
    remote: RemoteTerminal | None = None

    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        session_id = (query.get("session_id") or [""])[0]
        await self.accept()
        # A viewer back while svc starts (a page reconnecting after a restart) is answered once
        # the held terminals are taken back: before, it was told its terminal had exited.
        handed = parts.of(self.scope)
        await handed.runtime.until_started()
        session = await database_sync_to_async(selectors.session_get)(session_id)
        fleet = handed.fleet_sockets
        if session is None and fleet is not None and (owner := fleet.session_owner(session_id)):
            self.remote = RemoteTerminal(self, fleet, owner)
            await self.remote.open(session_id)
            return
        if session is None or session.kind != "terminal":  # chats live on /ws/chat
            await self.close(CLOSE_NOT_FOUND)
            return
        flow = server_compat.socket_flow(self.base_send)
        server_compat.allow_messages_up_to(self.base_send, SCROLLBACK_BYTES + 4096)
        self.view = handed.host.attach_terminal(
            str(session.id), self._send_bytes, self._send_json, flow
        )
        if self.view is None:  # ended before a restart: nothing left to show but the code
            await self._send_bytes(b"")
            await self._send_json({"type": "exited", "exit_code": session.exit_code})

    async def _send_bytes(self, data: bytes) -> None:
        if data or not server_compat.send_empty_binary_frame(self.base_send):
            await self.send(bytes_data=data)

    async def _send_json(self, event: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(event))
        if event.get("type") == "exited":
            await self.close(1000)

    async def dispatch(self, message: dict) -> None:
        # Channels closes stale database connections (a hop to a worker thread and back) before
        # every handler. A keystroke touches no database, and that hop was a third of its echo
        # (twice over for a terminal of another fleet member: its member's viewer, then this).
        if message["type"] == "websocket.receive":
            await self.websocket_receive(message)
        else:
            await super().dispatch(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.remote is not None:
            await self.remote.forward(text_data, bytes_data)
            return
        if self.view is None:
            return
        if bytes_data is not None:
            self.view.write(bytes_data)
        elif text_data is not None:
            meant = text_frame(text_data)
            if isinstance(meant, bytes):
                self.view.write(meant)
            elif meant is not None:
                self.view.resize(*meant)

    async def disconnect(self, code: int) -> None:
        if self.view is not None:
            await self.view.detach()
        if self.remote is not None:
            await self.remote.close()
