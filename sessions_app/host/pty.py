"""A terminal session: one child in a real PTY, its scrollback and its viewers.

The PTY is the holder's (holder/, contract §17), or svc's own with SVC_HOLDER=0
(host/direct.py): either way svc reads the session's output as a stream of frames and keeps
its own copy of the scrollback for viewers. The child is started through `setsid -c`, so it leads
a new session with the PTY as its controlling terminal (Ctrl-C then reaches the foreground job)
without running Python between fork and exec. When svc starts again, the session is attached
again from the start of the holder's scrollback: a viewer then sees every byte once, in order.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from holder import protocol as frames
from sessions_app.host import processes
from sessions_app.host.fanout import STALL_S, Flow, SendBytes, SendJson, Viewer

logger = logging.getLogger(__name__)

SCROLLBACK_BYTES = 2 << 20
ENTER_AFTER_PASTE_S = 0.15

OnExit = Callable[[str, int | None], Awaitable[None]]  # None: the holder went away


class Scrollback:
    """The last SCROLLBACK_BYTES of output, kept as chunks so trimming never copies 2 MiB."""

    def __init__(self, limit: int = SCROLLBACK_BYTES) -> None:
        self.limit, self.size = limit, 0
        self._chunks: collections.deque[bytes] = collections.deque()

    def append(self, data: bytes) -> None:
        self._chunks.append(data)
        self.size += len(data)
        while self.size - len(self._chunks[0]) >= self.limit:
            self.size -= len(self._chunks.popleft())
        if self.size > self.limit:
            cut = self.size - self.limit
            self._chunks[0] = self._chunks[0][cut:]
            self.size -= cut

    def read(self) -> bytes:
        return b"".join(self._chunks)


# What pasted text may not carry: every C0 control but tab and newline, DEL and C1 — ESC above
# all. Review text quotes files anyone may have written: with an ESC it could end the paste early
# (`ESC[201~`) and type keys, with a Ctrl-C (0x03) or CR it would signal or submit by itself.
_NOT_PASTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


def paste_bytes(text: str, bracketed: bool) -> bytes:
    """What svc writes for a paste of `text`: control characters removed; inside the paste
    marks when `bracketed`, else one line — outside a paste each newline is an Enter that
    submits and a tab is a key (completion), so both become spaces."""
    clean = _NOT_PASTABLE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    if bracketed:
        # A lone surrogate (JSON allows "\ud800") must not make the paste raise.
        return PASTE_START + clean.encode(errors="replace") + PASTE_END
    lines = clean.replace("\t", " ").split("\n")
    return " ".join(line for line in lines if line.strip()).encode(errors="replace")


class TerminalStream(Protocol):
    """A held terminal (holder.streams.Stream) or svc's own (host.direct.DirectPty)."""

    pid: int
    held: bool  # by a holder, which keeps it when svc stops

    async def read(self) -> tuple[bytes, bytes] | None: ...
    def write(self, data: bytes) -> None: ...
    def resize(self, cols: int, rows: int) -> None: ...
    def close(self) -> None: ...


class PtySession:
    def __init__(self, session_id: str, on_exit: OnExit) -> None:
        self.session_id = session_id
        self.scrollback = Scrollback()
        self.viewers: set[Viewer] = set()
        self.exit_code: int | None = None
        self.exited = asyncio.Event()
        self.lost = False  # the stream ended without an exit: the holder is gone
        self._on_exit = on_exit
        self._loop = asyncio.get_running_loop()
        self._flowing = asyncio.Event()  # cleared while a viewer is full
        self._flowing.set()
        self._reading: asyncio.Task[None] | None = None
        self.held = False  # by a holder, which keeps it when svc stops
        self.let_go_done = False

    def run(self, stream: TerminalStream) -> None:
        """Read `stream` until the process ends (a new one, or one taken back at start)."""
        self.stream, self.pid = stream, stream.pid
        self.held = stream.held
        self._reading = self._loop.create_task(self._read())

    async def let_go(self) -> None:
        """svc stops and the holder keeps the process: stop reading, end nothing."""
        self.let_go_done = True
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        self.stream.close()
        for viewer in list(self.viewers):
            await self.detach(viewer)

    # --- viewers ---------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        if self.exited.is_set():
            return {"type": "exited", "exit_code": self.exit_code}
        return {"type": "running"}

    def attach(self, send_bytes: SendBytes, send_json: SendJson, flow: Flow) -> Viewer:
        """Synchronous on purpose: the scrollback snapshot and the subscription happen in the same
        loop step, so a viewer neither misses nor repeats a byte. The viewer sends the scrollback
        frame and the state frame first, then the live output."""
        preamble: list[bytes | dict[str, Any]] = [self.scrollback.read(), self.state()]
        viewer = Viewer(
            send_bytes, send_json, flow, preamble, on_drain=self._maybe_resume, on_gone=self._forget
        )
        if not self.exited.is_set():
            self.viewers.add(viewer)
        return viewer

    def _forget(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)
        self._maybe_resume()

    async def detach(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)
        await viewer.close()
        self._maybe_resume()

    # --- output ----------------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            while True:
                await self._flowing.wait()
                frame = await self.stream.read()
                if frame is None:
                    self.lost = True
                    await self._lose()
                    return
                kind, data = frame
                if kind == frames.OUTPUT:
                    self._output(data)
                elif kind == frames.EXIT:
                    await self._announce_exit(json.loads(data)["exit_code"])
                    return
        except Exception:
            logger.exception("reading terminal %s failed", self.session_id)
            self.lost = True
            await self._lose()

    def _output(self, data: bytes) -> None:
        self.scrollback.append(data)
        for viewer in self.viewers:
            viewer.offer(data)
        if any(v.full for v in self.viewers):
            self._pause()

    def _pause(self) -> None:
        if self._flowing.is_set():
            self._flowing.clear()
            self._loop.create_task(self._watch_stalled())

    def _maybe_resume(self) -> None:
        if not self._flowing.is_set() and not any(v.full for v in self.viewers):
            self._flowing.set()

    async def _watch_stalled(self) -> None:
        """While paused, a full viewer that sent nothing for STALL_S stops holding the PTY back —
        but only when another viewer is waiting on it. When every viewer is behind (one client,
        or a loaded machine starving all readers) the PTY simply waits, as a real terminal does,
        and a momentarily slow reader never loses output. A viewer already let go (lagging)
        waits for nothing: it takes output again only once its own socket drains."""
        while not self._flowing.is_set():
            before = {v: v.sent for v in self.viewers if v.full}
            await asyncio.sleep(STALL_S)
            if any(not v.full and not v.lagging for v in self.viewers):
                for viewer, sent in before.items():
                    if viewer.full and viewer.sent == sent:
                        viewer.drop_behind()
            self._maybe_resume()

    async def _lose(self) -> None:
        """The holder went away (killed, crashed): the PTY went with it. What is left of the
        session's tree is ended, and the session ends interrupted (resumable)."""
        await processes.kill_session(self.pid, grace=0.5)
        await self._announce_exit(None)

    async def _announce_exit(self, exit_code: int | None) -> None:
        self.exit_code = exit_code
        self.stream.close()
        # The row first, so a client told "exited" that asks the API sees `exited` too.
        try:
            await self._on_exit(self.session_id, exit_code)
        except Exception:
            logger.exception("could not record the end of session %s", self.session_id)
        self.exited.set()
        for viewer in self.viewers:
            viewer.offer_event({"type": "exited", "exit_code": exit_code})

    # --- input and control -----------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if not self.exited.is_set():
            self.stream.write(data)

    def paste(self, text: str) -> None:
        """`text` as if pasted, then Enter (review comments for an agent's TUI). Inside
        bracketed-paste marks when the program turned them on (`ESC[?2004h`: the agents' TUIs
        do), so its newlines stay in one message; otherwise as one line. Either way the one
        Enter svc sends is the only key: see paste_bytes. Enter comes a moment later, as a
        person's would — TUIs that see it in the same read as the paste take it as part of it."""
        self.write(paste_bytes(text, bracketed=self._bracketed_paste()))
        self._loop.call_later(ENTER_AFTER_PASTE_S, self.write, b"\r")

    def _bracketed_paste(self) -> bool:
        seen = self.scrollback.read()
        return seen.rfind(b"\x1b[?2004h") > seen.rfind(b"\x1b[?2004l")

    def resize(self, cols: int, rows: int) -> None:
        if not self.exited.is_set():
            self.stream.resize(cols, rows)

    async def stop(self, grace: float = 1.0) -> None:
        if not self.exited.is_set():
            await processes.kill_session(self.pid, grace)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.exited.wait(), 3)


@dataclass
class TerminalView:
    """One viewer of a terminal: what it may do to the session."""

    session: PtySession
    viewer: Viewer

    def write(self, data: bytes) -> None:
        self.session.write(data)

    def resize(self, cols: int, rows: int) -> None:
        self.session.resize(cols, rows)

    async def detach(self) -> None:
        await self.session.detach(self.viewer)
