"""WebSocket helpers for tests: connect like the dashboard does and read list frames."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import websockets

from harness.daemon import Daemon


def connect(daemon: Daemon, path: str, **kwargs: Any) -> Any:
    sep = "&" if "?" in path else "?"
    return websockets.connect(
        f"{daemon.ws_url}{path}{sep}token={daemon.owner_token}",
        origin=websockets.Origin(daemon.origin),
        open_timeout=10,
        max_size=None,
        **kwargs,
    )


async def recv_json(ws: Any, timeout: float = 5) -> Any:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def wait_for_frame(
    ws: Any, predicate: Callable[[Any], bool], timeout: float = 5
) -> tuple[Any, float]:
    """Reads frames until one satisfies `predicate`; returns it and the monotonic arrival time."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no matching frame arrived in time")
        frame = await recv_json(ws, remaining)
        if predicate(frame):
            return frame, time.monotonic()
