"""The bridge's request log: rows are queued in memory and written in batches by one background
task, so no request waits on the database. The writing thread shares the interpreter with the
event loop, so the write is one plain `executemany` (no model objects): requests that coincide
with it wait microseconds, not the milliseconds an ORM batch took (bench/bridge.py's p99)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import sync_to_async

logger = logging.getLogger(__name__)
FLUSH_EVERY = 0.5
MAX_QUEUED = 10_000  # if the database stalls, drop rows rather than grow without bound

_rows: list[dict[str, Any]] = []
_task: asyncio.Task | None = None


def record(**row: Any) -> None:
    global _task
    if len(_rows) < MAX_QUEUED:
        _rows.append(row)
    if _task is None or _task.done():
        _task = asyncio.get_running_loop().create_task(_flush_soon())


async def _flush_soon() -> None:
    from bridge_app import services

    await asyncio.sleep(FLUSH_EVERY)
    rows = _rows[:]
    del _rows[: len(rows)]
    try:
        await sync_to_async(services.bridge_requests_record, thread_sensitive=False)(rows=rows)
    except Exception:
        logger.exception("could not write %d bridge request-log rows", len(rows))
