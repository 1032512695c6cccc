"""`/ws?session_id=<uuid>`: a viewer of a hosted terminal (SPEC §7).

Terminal bytes go straight from the host's per-viewer queue to this socket, never through the
channel layer (it drops messages when full); the server tells the host when this socket can take
more (svcproject.server_compat.socket_flow).
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from sessions_app import selectors
from sessions_app.host import registry
from sessions_app.host.pty import SCROLLBACK_BYTES
from sessions_app.host.registry import TerminalView
from svcproject import server_compat

logger = logging.getLogger(__name__)

CLOSE_NOT_FOUND = 4404


def resize_message(text: str) -> dict[str, Any] | None:
    """The text frame as a resize message, or None when it is text to type."""
    if not text.startswith("{"):
        return None
    try:
        message = json.loads(text)
    except ValueError:
        return None
    return message if isinstance(message, dict) and message.get("type") == "resize" else None


def parse_resize(text: str) -> tuple[int, int] | None:
    message = resize_message(text)
    if message is None:
        return None
    cols, rows = message.get("cols"), message.get("rows")
    if not all(isinstance(v, int) and 1 <= v <= 1000 for v in (cols, rows)):
        return None
    return cols, rows


class TerminalConsumer(AsyncWebsocketConsumer):
    view: TerminalView | None = None

    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        session_id = (query.get("session_id") or [""])[0]
        session = await database_sync_to_async(selectors.session_get)(session_id)
        await self.accept()
        if session is None or session.kind != "terminal":  # chats live on /ws/chat
            await self.close(CLOSE_NOT_FOUND)
            return
        flow = server_compat.socket_flow(self.base_send)
        server_compat.allow_messages_up_to(self.base_send, SCROLLBACK_BYTES + 4096)
        self.view = registry.attach_terminal(
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

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.view is None:
            return
        if bytes_data is not None:
            self.view.write(bytes_data)
        elif text_data is not None:
            if (size := parse_resize(text_data)) is not None:
                self.view.resize(*size)
            elif resize_message(text_data) is None:
                self.view.write(text_data.encode())
            # else a resize to a size no terminal has (a 0x0 pty): dropped, never typed

    async def disconnect(self, code: int) -> None:
        if self.view is not None:
            await self.view.detach()
