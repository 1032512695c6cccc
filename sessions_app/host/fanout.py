"""Fan-out of terminal output to any number of viewers, each behind its own bounded queue.

The PTY reader only ever appends to queues; one pump task per viewer sends. A viewer whose
queue is full pauses the PTY (like a real terminal follows its reader), but a viewer that makes
no progress for `STALL_S` is put into *lagging*: its queue is dropped, it no longer holds the PTY
back, and once its socket has drained it gets a `{"type":"skipped","bytes":N}` notice and
continues from the live output. So a stalled client never blocks the PTY or the others for long,
and a reading client gets every byte.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

logger = logging.getLogger(__name__)

QUEUE_LIMIT = 1 << 20  # bytes queued per viewer before it holds the PTY back
FRAME_MAX = 256 << 10  # queued chunks are coalesced into frames of at most this size
STALL_S = 0.5

SendBytes = Callable[[bytes], Awaitable[None]]
SendJson = Callable[[dict[str, Any]], Awaitable[None]]


class Flow(Protocol):
    """Whether the viewer's connection can take more now (the server tells: server_compat)."""

    async def wait_writable(self) -> None: ...


class Viewer:
    def __init__(
        self,
        send_bytes: SendBytes,
        send_json: SendJson,
        flow: Flow,
        preamble: list[bytes | dict[str, Any]],
        *,
        on_drain: Callable[[], None] = lambda: None,
        on_gone: Callable[[Viewer], None] = lambda viewer: None,
    ) -> None:
        self._send_bytes, self._send_json, self._flow = send_bytes, send_json, flow
        # Sent first, each as its own frame (the scrollback frame, then the state frame).
        self._preamble = preamble
        self._queue: collections.deque[bytes | dict[str, Any]] = collections.deque()
        self.queued = 0
        self.sent = 0  # bytes handed to the socket; a stall check compares it over time
        self.lagging = False
        self.skipped = 0
        self._wake = asyncio.Event()
        self._closed = False
        # What the terminal does when this viewer's queue drains (resume reading) and when it
        # goes (forget it): given by the terminal that attaches it (host/pty.py).
        self.on_drain, self.on_gone = on_drain, on_gone
        self._task = asyncio.get_running_loop().create_task(self._pump())

    @property
    def full(self) -> bool:
        return not self.lagging and self.queued >= QUEUE_LIMIT

    def offer(self, data: bytes) -> None:
        if self.lagging:
            self.skipped += len(data)
            return
        self._queue.append(data)
        self.queued += len(data)
        self._wake.set()

    def offer_event(self, event: dict[str, Any]) -> None:
        self._queue.append(event)
        self._wake.set()

    def drop_behind(self) -> None:
        """Skip ahead: forget what is queued; the pump announces the gap once the socket drains."""
        self.lagging = True
        self.skipped += self.queued
        self._queue = collections.deque(i for i in self._queue if isinstance(i, dict))
        self.queued = 0
        self._wake.set()

    async def close(self) -> None:
        self._closed = True
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task

    def _next_frame(self) -> bytes | dict[str, Any]:
        first = self._queue.popleft()
        if isinstance(first, dict):
            return first
        parts, size = [first], len(first)
        while self._queue and isinstance(self._queue[0], bytes) and size < FRAME_MAX:
            chunk = self._queue.popleft()
            parts.append(chunk)  # type: ignore[arg-type]
            size += len(chunk)  # type: ignore[arg-type]
        self.queued -= size
        return b"".join(parts)

    async def _pump(self) -> None:
        try:
            for item in self._preamble:
                if isinstance(item, dict):
                    await self._send_json(item)
                else:
                    await self._send_bytes(item)
            self._preamble = []
            while not self._closed:
                if self.lagging:
                    await self._rejoin()
                    continue
                if not self._queue:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                await self._flow.wait_writable()
                if self.lagging or not self._queue:  # dropped behind while waiting
                    continue
                item = self._next_frame()
                if isinstance(item, dict):
                    await self._send_json(item)
                    continue
                await self._send_bytes(item)
                self.sent += len(item)
                if self.queued < QUEUE_LIMIT // 2:
                    self.on_drain()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # A viewer whose socket refuses a frame must not stay behind holding the PTY back.
            # Usually its socket just closed: one line, not a traceback, for an everyday event.
            logger.info("dropping a terminal viewer that could not be sent to: %r", exc)
            self._closed = True
            self.on_gone(self)

    async def _rejoin(self) -> None:
        await self._flow.wait_writable()
        skipped, self.skipped, self.lagging = self.skipped, 0, False
        await self._send_json({"type": "skipped", "bytes": skipped})
        self.on_drain()
