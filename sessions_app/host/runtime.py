"""In-memory registry of live ACP agent sessions, published on /ws/agents/runtime."""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_entries: dict[str, dict[str, Any]] = {}


def snapshot() -> list[dict[str, Any]]:
    with _lock:
        return [dict(entry) for _, entry in sorted(_entries.items())]


def put(session_id: str, **fields: Any) -> None:
    with _lock:
        _entries.setdefault(session_id, {"session_id": session_id}).update(fields)


def remove(session_id: str) -> None:
    with _lock:
        _entries.pop(session_id, None)
