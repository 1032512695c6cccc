"""svc's end of one attached session (holder/client.py attaches): the frames read from the
holder's connection, the stream svc reads and writes, and the keys written straight into a PTY
svc was handed."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
from typing import Any

from holder import protocol as p
from holder.held import INPUT_LIMIT, set_size


class Frames(asyncio.Protocol):
    """A session's stream as frames, parsed as they arrive. Consecutive output is handed on as
    one piece (a terminal flood costs one wake-up per socket read, not one per PTY read), and
    reading pauses while more than PAUSE_AT bytes wait, so a slow svc holds the holder back."""

    PAUSE_AT = 1 << 20

    def __init__(self) -> None:
        self.frames: collections.deque[tuple[bytes, bytes]] = collections.deque()
        self.output: list[bytes] = []  # output after the last frame in `frames`, not yet joined
        self.buffer = bytearray()
        self.waiting: asyncio.Future[None] | None = None
        self.queued = 0
        self.ended = False
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        for kind, payload in p.split_frames(self.buffer):
            if kind == p.OUTPUT:
                self.output.append(payload)
            else:
                self._flush_output()
                self.frames.append((kind, payload))
            self.queued += len(payload)
        if self.queued > self.PAUSE_AT and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self._wake()

    def _flush_output(self) -> None:
        if self.output:
            self.frames.append((p.OUTPUT, b"".join(self.output)))
            self.output = []

    def _wake(self) -> None:
        if self.waiting is not None and not self.waiting.done():
            self.waiting.set_result(None)

    async def next(self) -> tuple[bytes, bytes] | None:
        while not self.frames:
            if self.output:
                self._flush_output()
                break
            if self.ended:
                return None
            self.waiting = asyncio.get_running_loop().create_future()
            await self.waiting
        kind, payload = self.frames.popleft()
        self.queued -= len(payload)
        if self.paused and self.queued < self.PAUSE_AT // 2:
            self.paused = False
            self.transport.resume_reading()
        return kind, payload


class Stream:
    """One session's output from `offset` on, and the way to its input."""

    held = True  # the holder keeps the process when svc lets go of the stream

    def __init__(
        self,
        transport: asyncio.Transport,
        frames: Frames,
        hello: dict[str, Any],
        pty: int | None = None,
    ) -> None:
        self.transport, self.frames = transport, frames
        self.offset: int = hello["offset"]  # where the first output frame starts
        self.generation: int = hello["generation"]
        self.pid: int = hello["pid"]
        self.exit_code: int | None = hello["exit_code"]
        # A terminal's PTY, passed by the holder: keys and sizes go straight into it.
        self.pty = PtyInput(pty) if pty is not None else None

    async def read(self) -> tuple[bytes, bytes] | None:
        """The next frame (OUTPUT, GAP or EXIT), or None once the holder closed the stream."""
        return await self.frames.next()

    def write(self, data: bytes) -> None:
        if self.pty is not None:
            self.pty.write(data)
            return
        for start in range(0, len(data), p.MAX_FRAME):
            self.transport.write(p.frame(p.INPUT, data[start : start + p.MAX_FRAME]))

    def resize(self, cols: int, rows: int) -> None:
        if self.pty is not None:
            self.pty.resize(cols, rows)
            return
        self.transport.write(p.json_frame(p.RESIZE, {"cols": cols, "rows": rows}))

    def ack(self, offset: int) -> None:
        self.transport.write(p.json_frame(p.ACK, {"offset": offset}))

    def close_input(self) -> None:
        self.transport.write(p.frame(p.END_INPUT, b""))

    def close(self) -> None:
        self.transport.close()
        if self.pty is not None:
            self.pty.close()


class PtyInput:
    """Writing to a terminal's PTY without blocking: what the process has not read yet waits,
    up to INPUT_LIMIT (keys typed ahead into a program that reads none are dropped beyond it,
    as a real terminal's would be)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_blocking(fd, False)
        self.pending = bytearray()
        self.loop = asyncio.get_running_loop()
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        if self.pending:
            if len(self.pending) + len(data) <= INPUT_LIMIT:
                self.pending += data
            return
        try:
            written = os.write(self.fd, data)
        except BlockingIOError:
            written = 0
        except OSError:
            return
        if written < len(data):
            self.pending += data[written:]
            self.loop.add_writer(self.fd, self._flush)

    def _flush(self) -> None:
        try:
            written = os.write(self.fd, self.pending)
        except BlockingIOError:
            return
        except OSError:
            written = len(self.pending)
        del self.pending[:written]
        if not self.pending:
            self.loop.remove_writer(self.fd)

    def resize(self, cols: int, rows: int) -> None:
        if not self.closed:
            with contextlib.suppress(OSError):
                set_size(self.fd, cols, rows)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.pending:
                self.loop.remove_writer(self.fd)
            os.close(self.fd)
