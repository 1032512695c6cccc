"""The bridge's request log: rows are queued in memory and written in batches by one background
task, so no request waits on the database. The writing thread shares the interpreter with the
event loop, so the write is one plain `executemany` (no model objects): requests that coincide
with it wait microseconds, not the milliseconds an ORM batch took (bench/bridge.py's p99)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import sync_to_async

from bridge_app import services

logger = logging.getLogger(__name__)
FLUSH_EVERY = 0.5
MAX_QUEUED = 10_000  # if the database stalls, drop rows rather than grow without bound


class RequestLog:
    """One per runtime: rows queued here, written by one background task at a time."""

    def __init__(self) -> None:
        self._rows: list[dict[str, Any]] = []
        self._task: asyncio.Task | None = None

    def record(self, **row: Any) -> None:
        if len(self._rows) < MAX_QUEUED:
            self._rows.append(row)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._flush_soon())

    async def _flush_soon(self) -> None:
        await asyncio.sleep(FLUSH_EVERY)
        await self._write()

    async def _write(self) -> None:
        rows = self._rows[:]
        del self._rows[: len(rows)]
        if not rows:
            return
        try:
            await sync_to_async(services.bridge_requests_record, thread_sensitive=False)(rows=rows)
        except Exception:
            logger.exception("could not write %d bridge request-log rows", len(rows))

    async def flush(self) -> None:
        """At stop: what is queued is written now, and no task is left pending."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._write()
