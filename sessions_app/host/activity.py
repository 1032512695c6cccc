"""What hosted agents and subagent turns are doing right now, published on /ws/agents/runtime.

Owned by the process host (one per runtime); the host knows no WebSockets, so whoever builds
it says who hears of changes (`publish`)."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any


async def _nobody() -> None:
    return None


class Activity:
    def __init__(self, publish: Callable[[], Awaitable[None]] = _nobody) -> None:
        self._lock = threading.Lock()  # the list's selector reads it from a worker thread
        self._entries: dict[str, dict[str, Any]] = {}
        self._publish = publish

    async def publish(self) -> None:
        await self._publish()

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(entry) for _, entry in sorted(self._entries.items())]

    def put(self, key: str, **fields: Any) -> None:
        with self._lock:
            self._entries.setdefault(key, {"session_id": key}).update(fields)

    def remove(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)
