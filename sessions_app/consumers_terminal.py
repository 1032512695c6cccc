"""`/ws?session_id=<uuid>`: a viewer of a hosted terminal (SPEC §7).

Terminal bytes go straight from the host's per-viewer queue to this socket, never through the
channel layer (it drops messages when full).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from sessions_app import selectors
from sessions_app.host import registry
from sessions_app.host.fanout import Viewer
from sessions_app.host.pty import PtySession

logger = logging.getLogger(__name__)

CLOSE_NOT_FOUND = 4404


def daphne_protocol(send: Any) -> Any:
    """Daphne hands the app `partial(server.handle_reply, protocol)`; None under other servers."""
    return send.args[0] if isinstance(send, functools.partial) and send.args else None


def socket_backlog(send: Any) -> Callable[[], int]:
    """Bytes written to this viewer's socket but not yet taken by the kernel.

    Daphne's `send` never waits for the client: Twisted buffers without bound. The transport's
    write buffer is the only place a slow client shows, so we read it. Without daphne, report 0
    (no backpressure)."""
    protocol = daphne_protocol(send)

    def backlog() -> int:
        transport = getattr(protocol, "transport", None)
        while transport is not None and hasattr(transport, "wrappedProtocol"):
            transport = getattr(transport, "transport", None)  # TLS / policy wrappers
        try:
            unsent = len(transport.dataBuffer) - transport.offset  # type: ignore[union-attr]
            return unsent + transport._tempDataLen  # type: ignore[union-attr]
        except AttributeError:
            return 0

    return backlog


def parse_resize(text: str) -> tuple[int, int] | None:
    try:
        message = json.loads(text)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("type") != "resize":
        return None
    cols, rows = message.get("cols"), message.get("rows")
    if not all(isinstance(v, int) and 1 <= v <= 1000 for v in (cols, rows)):
        return None
    return cols, rows


class TerminalConsumer(AsyncWebsocketConsumer):
    term: PtySession | None = None
    viewer: Viewer | None = None

    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        session_id = (query.get("session_id") or [""])[0]
        session = await database_sync_to_async(selectors.session_get)(session_id)
        await self.accept()
        if session is None or session.kind != "terminal":  # chats live on /ws/chat
            await self.close(CLOSE_NOT_FOUND)
            return
        self.term = registry.terminal(str(session.id))
        if self.term is None:  # ended before a restart: nothing left to show but the code
            await self._send_bytes(b"")
            await self._send_json({"type": "exited", "exit_code": session.exit_code})
            return
        self.viewer = self.term.attach(
            self._send_bytes, self._send_json, socket_backlog(self.base_send)
        )

    async def _send_bytes(self, data: bytes) -> None:
        if not data:
            # Daphne drops empty `bytes` messages, but an empty scrollback is still a frame
            # clients count on (SPEC §7), so send it through daphne's own protocol method.
            protocol = daphne_protocol(self.base_send)
            if protocol is not None:
                protocol.serverSend(b"", True)
            return
        await self.send(bytes_data=data)

    async def _send_json(self, event: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(event))
        if event.get("type") == "exited":
            await self.close(1000)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.term is None:
            return
        if bytes_data is not None:
            self.term.write(bytes_data)
        elif text_data is not None:
            size = parse_resize(text_data) if text_data.startswith("{") else None
            if size is not None:
                self.term.resize(*size)
            else:
                self.term.write(text_data.encode())

    async def disconnect(self, code: int) -> None:
        if self.term is not None and self.viewer is not None:
            await self.term.detach(self.viewer)
