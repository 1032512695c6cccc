"""The live lists' WebSocket consumer (contract §7), for every registered list (core.live).
Auth and Origin are checked before it runs (core.auth)."""

from __future__ import annotations

import asyncio

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import re_path

from core import live as lists
from core import parts, server_compat


class ListConsumer(AsyncWebsocketConsumer):
    """Sends the complete list on connect and after every change; bursts collapse into one
    re-send, and a re-send always starts after the newest notification, so the last frame a client
    gets equals the state. The list itself is read once per change for all clients
    (lists.SharedSnapshot)."""

    list_name: str

    async def connect(self) -> None:
        self.list_name = self.scope["url_route"]["kwargs"]["list_name"]
        if self.list_name not in lists.names():
            await self.close(code=4404)  # as for any unknown socket path
            return
        self._shared = parts.of(self.scope).runtime.lists.shared(self.list_name)
        self._dirty = asyncio.Event()
        await self.channel_layer.group_add(lists.group_name(self.list_name), self.channel_name)
        await self.accept()
        self._flow = server_compat.socket_flow(self.base_send)
        self._shared.changed(None)  # changes made while nobody listened here are not known
        await self._send_snapshot()
        self._sender = asyncio.create_task(self._send_when_dirty())

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "_sender"):
            self._sender.cancel()
        await self.channel_layer.group_discard(lists.group_name(self.list_name), self.channel_name)

    async def dispatch(self, message: dict) -> None:
        # Channels closes stale database connections (a hop to the sync thread) before every
        # handler. A change notice touches no database (the shared snapshot reads it through
        # database_sync_to_async, which closes them itself), and with 50 clients those hops
        # were most of what a change cost the daemon.
        if message["type"] == "list.changed":
            await self.list_changed(message)
        else:
            await super().dispatch(message)

    async def list_changed(self, event: dict) -> None:
        self._shared.changed(event.get("change"))
        self._dirty.set()

    async def _send_when_dirty(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            await self._send_snapshot()

    async def _send_snapshot(self) -> None:
        # A client that reads slowly holds its changes back here, where they collapse into one
        # re-send, rather than in Twisted's buffer (core.server_compat.socket_flow).
        for frame in await self._shared.frames():
            await self._flow.wait_writable()
            await self.send(text_data=frame)


def websocket_urlpatterns() -> list:
    """`/ws/<list>` for each registered list, and `/ws/agents/runtime` (contract §7)."""
    return [
        re_path(r"^ws/agents/runtime/?$", ListConsumer.as_asgi(), {"list_name": "agents_runtime"}),
        re_path(r"^ws/(?P<list_name>[a-z_]+)/?$", ListConsumer.as_asgi()),
    ]
