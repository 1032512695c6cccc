"""An open dashboard's /ws/notifications for bench/chat_channels.py: every frame stamped as it
arrives, and when a notification first showed and when its dashboard delivery read `sent`."""

from __future__ import annotations

import asyncio
import time
from typing import Any


class Dashboard:
    """An open dashboard's /ws/notifications, each frame stamped on arrival."""

    def __init__(self, parts: Any) -> None:
        from channels.testing import WebsocketCommunicator

        from core import config
        from harness.runtime import scoped
        from svcproject.asgi import routed

        token = config.current_auth().owner_token
        app = scoped(routed, parts)  # the bench's parts in the scope, as the daemon's are
        self.ws = WebsocketCommunicator(app, f"/ws/notifications?token={token}")
        self.frames: list[tuple[float, list[dict[str, Any]]]] = []

    async def open(self) -> None:
        assert (await self.ws.connect())[0], "the dashboard socket was refused"
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        while True:
            items = await self.ws.receive_json_from(timeout=3600)
            self.frames.append((time.monotonic(), items))

    def listed(self, since: int, known: set[str]) -> tuple[str, float] | None:
        """The first frame from `since` listing a notification not in `known`: (its id, time)."""
        for t, items in self.frames[since:]:
            if items and items[0]["id"] not in known:
                return items[0]["id"], t
        return None

    def delivered(self, since: int, nid: str) -> float | None:
        """The first frame from `since` where `nid`'s dashboard delivery shows `sent`."""
        for t, items in self.frames[since:]:
            for item in items:
                if item["id"] == nid and any(
                    d["target"] == "dashboard" and d["status"] == "sent" for d in item["deliveries"]
                ):
                    return t
        return None

    async def close(self) -> None:
        self.reader.cancel()
        await self.ws.disconnect()
