"""In-memory registry of live ACP agent sessions, published on /ws/agents/runtime."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

_lock = threading.Lock()
_entries: dict[str, dict[str, Any]] = {}
_listener: Callable[[], Awaitable[None]] | None = None


def set_listener(listener: Callable[[], Awaitable[None]]) -> None:
    """Who hears of changes (the live list, wired by the app): the host knows no WebSockets."""
    global _listener
    _listener = listener


async def publish() -> None:
    if _listener is not None:
        await _listener()


def snapshot() -> list[dict[str, Any]]:
    with _lock:
        return [dict(entry) for _, entry in sorted(_entries.items())]


def put(session_id: str, **fields: Any) -> None:
    with _lock:
        _entries.setdefault(session_id, {"session_id": session_id}).update(fields)


def remove(session_id: str) -> None:
    with _lock:
        _entries.pop(session_id, None)
