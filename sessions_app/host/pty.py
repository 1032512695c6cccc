"""A terminal session: one child in a real PTY, its scrollback and its viewers.

Spawned through `setsid -c` so the child leads a new session with the PTY as its controlling
terminal (Ctrl-C then reaches the foreground job) without running Python between fork and exec.
Exit is seen through a pidfd, output through add_reader on the master; nothing blocks the loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import logging
import os
import struct
import subprocess
import termios
from collections.abc import Awaitable, Callable
from typing import Any

from sessions_app.host import processes
from sessions_app.host.fanout import STALL_S, Flow, SendBytes, SendJson, Viewer

logger = logging.getLogger(__name__)

SCROLLBACK_BYTES = 2 << 20
READ_SIZE = 64 << 10
INPUT_LIMIT = 4 << 20
EOF_GRACE_S = 2.0
ENTER_AFTER_PASTE_S = 0.15

OnExit = Callable[[str, int], Awaitable[None]]


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


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class PtySession:
    def __init__(self, session_id: str, on_exit: OnExit) -> None:
        self.session_id = session_id
        self.scrollback = Scrollback()
        self.viewers: set[Viewer] = set()
        self.exit_code: int | None = None
        self.exited = asyncio.Event()
        self._on_exit = on_exit
        self._loop = asyncio.get_running_loop()
        self._paused = False
        self._eof = False
        self._finished = False
        self._pending_input = bytearray()

    def start(
        self, argv: tuple[str, ...], env: dict[str, str], cwd: str, cols: int, rows: int
    ) -> int:
        master, slave = os.openpty()
        _set_size(slave, cols, rows)
        try:
            self.proc = subprocess.Popen(
                processes.with_default_signals(("setsid", "-c", *argv)),
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=cwd,
                env=env,
                close_fds=True,
            )
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self.master, self.pid = master, self.proc.pid
        os.set_blocking(master, False)
        self._pidfd = os.pidfd_open(self.pid)
        self._loop.add_reader(master, self._on_readable)
        self._loop.add_reader(self._pidfd, self._on_process_exit)
        return self.pid

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
        viewer = Viewer(send_bytes, send_json, flow, preamble)
        viewer.on_drain = self._maybe_resume
        viewer.on_gone = self._forget
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

    def _on_readable(self) -> None:
        for _ in range(8):  # a few reads per wake-up: fewer, larger frames under load
            try:
                data = os.read(self.master, READ_SIZE)
            except BlockingIOError:
                return
            except OSError:  # EIO: every slave fd is closed
                data = b""
            if not data:
                self._on_eof()
                return
            self.scrollback.append(data)
            for viewer in self.viewers:
                viewer.offer(data)
            if any(v.full for v in self.viewers):
                self._pause()
                return

    def _pause(self) -> None:
        if not self._paused:
            self._paused = True
            self._loop.remove_reader(self.master)
            self._loop.create_task(self._watch_stalled())

    def _maybe_resume(self) -> None:
        if self._paused and not self._eof and not any(v.full for v in self.viewers):
            self._paused = False
            self._loop.add_reader(self.master, self._on_readable)

    async def _watch_stalled(self) -> None:
        """While paused, a full viewer that sent nothing for STALL_S stops holding the PTY back —
        but only when another viewer is waiting on it. When every viewer is behind (one client,
        or a loaded machine starving all readers) the PTY simply waits, as a real terminal does,
        and a momentarily slow reader never loses output. A viewer already let go (lagging)
        waits for nothing: it takes output again only once its own socket drains."""
        while self._paused:
            before = {v: v.sent for v in self.viewers if v.full}
            await asyncio.sleep(STALL_S)
            if any(not v.full and not v.lagging for v in self.viewers):
                for viewer, sent in before.items():
                    if viewer.full and viewer.sent == sent:
                        viewer.drop_behind()
            self._maybe_resume()

    def _on_eof(self) -> None:
        self._eof = True
        self._loop.remove_reader(self.master)
        self._paused = False
        self._finish_if_done()

    def _on_process_exit(self) -> None:
        self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self.exit_code = processes.exit_code_of(self.proc.wait())
        # The leader is gone: hang up what it left behind so the PTY reaches EOF.
        self._loop.create_task(processes.kill_session(self.pid, grace=0.5))
        self._loop.call_later(EOF_GRACE_S, self._give_up_on_eof)
        self._finish_if_done()

    def _give_up_on_eof(self) -> None:
        """A process that left the session (`setsid cmd &`) may hold the PTY open forever; once
        the output read so far has been handed on, the session ends without it."""
        if self._eof:
            return
        if self._paused:  # viewers are still taking the last output
            self._loop.call_later(EOF_GRACE_S, self._give_up_on_eof)
            return
        self._on_readable()  # what is still buffered in the PTY
        if not self._eof and not self._paused:
            self._on_eof()
        elif not self._eof:
            self._loop.call_later(EOF_GRACE_S, self._give_up_on_eof)

    def _finish_if_done(self) -> None:
        if not (self._eof and self.exit_code is not None) or self._finished:
            return
        self._finished = True
        self._loop.remove_writer(self.master)
        with contextlib.suppress(OSError):
            os.close(self.master)
        self._loop.create_task(self._announce_exit(self.exit_code))

    async def _announce_exit(self, exit_code: int) -> None:
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
        if self._finished or self._eof:
            return
        if self._pending_input:
            if len(self._pending_input) + len(data) <= INPUT_LIMIT:
                self._pending_input += data
            return
        try:
            written = os.write(self.master, data)
        except BlockingIOError:
            written = 0
        except OSError:
            return
        if written < len(data):
            self._pending_input += data[written:]
            self._loop.add_writer(self.master, self._flush_input)

    def paste(self, text: str) -> None:
        """`text` as if pasted, then Enter. Inside bracketed-paste marks when the program turned
        them on (`ESC[?2004h`: the agents' TUIs and bash do), so its newlines stay in one message
        instead of each submitting a line; Enter comes a moment later, as a person's would —
        TUIs that see it in the same read as the paste take it as part of the paste."""
        data = text.replace("\r\n", "\n").encode()
        if self._bracketed_paste():
            data = b"\x1b[200~" + data + b"\x1b[201~"
        else:
            data = data.replace(b"\n", b"\r")
        self.write(data)
        self._loop.call_later(ENTER_AFTER_PASTE_S, self.write, b"\r")

    def _bracketed_paste(self) -> bool:
        seen = self.scrollback.read()
        return seen.rfind(b"\x1b[?2004h") > seen.rfind(b"\x1b[?2004l")

    def _flush_input(self) -> None:
        try:
            written = os.write(self.master, self._pending_input)
        except BlockingIOError:
            return
        except OSError:
            written = len(self._pending_input)
        del self._pending_input[:written]
        if not self._pending_input:
            self._loop.remove_writer(self.master)

    def resize(self, cols: int, rows: int) -> None:
        if not self._finished:  # after that the fd number may belong to another file
            with contextlib.suppress(OSError):
                _set_size(self.master, cols, rows)

    async def stop(self, grace: float = 1.0) -> None:
        if not self.exited.is_set():
            await processes.kill_session(self.pid, grace)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.exited.wait(), 3)
