"""One held process: its PTY or pipes, its journal and (while svc is attached) its stream."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import struct
import subprocess
import termios
from pathlib import Path
from typing import Any, Protocol

from holder import paths, procs
from holder import protocol as p
from holder.checks import Spawn
from holder.lease import READ_SIZE, Lease
from holder.loop import Owner

logger = logging.getLogger("holder")

SCROLLBACK = 2 << 20
TRIM_AT = 8 * SCROLLBACK  # a terminal's journal is cut back to its scrollback past this
READS_PER_WAKE = 16
BACKLOG = 256 << 10  # output queued for svc before a terminal waits for it
INPUT_LIMIT = 4 << 20  # keys typed ahead into a terminal that does not read them
COMPACT_AT = 4 << 20  # an agent's journal is rewritten from svc's offset past this
EOF_GRACE_S = 2.0  # for a process that left the session still holding the PTY
HANGUP_GRACE_S = 0.5


class Stream(Protocol):
    """svc's connection to a held process, once attached (holder/conn.py)."""

    out: bytearray
    session: Held | None
    closed: bool

    def send(self, data: bytes) -> None: ...

    def send_output(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class Held:
    """One held process, its journal and (while svc is attached) its stream."""

    def __init__(self, holder: Owner, sid: str, kind: str) -> None:
        self.holder, self.id, self.kind = holder, sid, kind
        self.dir = paths.private_dir(paths.session_dir(holder.dir, sid))
        self.journal_path = self.dir / "out"
        self.journal = _open_journal(self.journal_path)
        self.base = self.end = self.acked = 0  # offsets in the output since the start
        self.generation = 0
        self.stream: Stream | None = None
        self.lease: Lease | None = None  # svc reads the PTY itself (holder/lease.py)
        self.sent = 0
        self.exit_sent = False
        self.pending = bytearray()  # input the process has not read yet
        self.closing_input = False
        self.exit_code: int | None = None
        self.eof = False
        self.finished = False
        self.out_fd = self.in_fd = -1
        self.pid = 0

    # --- start -----------------------------------------------------------------------------

    def spawn(self, spec: Spawn) -> int:
        argv, env, cwd = spec.argv, spec.env, spec.cwd
        if self.kind == "pty":
            master, slave = os.openpty()
            try:
                set_size(slave, spec.cols, spec.rows)
                proc = subprocess.Popen(
                    argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, close_fds=True
                )
            except BaseException:
                os.close(master)
                raise
            finally:
                os.close(slave)
            self.out_fd = self.in_fd = master
        else:
            proc, self.out_fd, self.in_fd = procs.spawn_pipes(
                argv, env, cwd, spec.stderr or os.devnull
            )
        self.proc, self.pid = proc, proc.pid
        self.base = self.end = self.acked = self.sent = spec.offset
        if spec.preface:
            _write_all(self.journal, spec.preface)
            self.end += len(spec.preface)
        os.set_blocking(self.out_fd, False)
        os.set_blocking(self.in_fd, False)
        self.pidfd = os.pidfd_open(self.pid)
        self.holder.loop.watch(self.pidfd, self.on_process_exit, None)
        self.rewatch()
        return self.pid

    # --- output ----------------------------------------------------------------------------

    def reading(self) -> bool:
        if self.eof:
            return False
        if self.kind != "pty" or self.stream is None:
            return True
        if self.lease is not None:
            return False
        return len(self.stream.out) < BACKLOG and self.end - self.sent < BACKLOG

    def rewatch(self) -> None:
        loop = self.holder.loop
        on_read = self.on_output if self.reading() else None
        on_write = self.on_input_writable if self.pending and self.in_fd >= 0 else None
        if self.out_fd >= 0 and self.out_fd == self.in_fd:
            loop.watch(self.out_fd, on_read, on_write)
            return
        if self.out_fd >= 0:
            loop.watch(self.out_fd, on_read, None)
        if self.in_fd >= 0:
            loop.watch(self.in_fd, None, on_write)

    def on_output(self) -> None:
        chunks: list[bytes] = []
        eof = False
        for _ in range(READS_PER_WAKE):  # a PTY hands out ~4 KiB a read: fewer, larger frames
            try:
                chunk = os.read(self.out_fd, READ_SIZE)
            except BlockingIOError:
                break
            except OSError:  # EIO: every slave of the PTY is closed
                chunk = b""
            if not chunk:
                eof = True
                break
            chunks.append(chunk)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if data:
            self.on_data(data)
        if eof:
            self.on_eof()

    def on_data(self, data: bytes) -> None:
        caught_up = self.stream is not None and self.sent == self.end
        _write_all(self.journal, data)
        self.end += len(data)
        if caught_up and self.stream is not None and len(self.stream.out) < BACKLOG:
            self.sent = self.end  # straight on, without reading it back from the journal
            self.stream.send_output(data)
        else:
            self.pump()
        self.trim()
        self.rewatch()

    def pump(self) -> None:
        """Send the stream what it has not had yet, from the journal, up to the backlog."""
        stream = self.stream
        if stream is None:
            return
        while self.sent < self.end and len(stream.out) < BACKLOG and not stream.closed:
            if self.sent < self.base:
                stream.send(p.json_frame(p.GAP, {"skipped": self.base - self.sent}))
                self.sent = self.base
                continue
            size = min(READ_SIZE, self.end - self.sent)
            data = os.pread(self.journal, size, self.sent - self.base)
            if not data:
                break
            stream.send_output(data)
            self.sent += len(data)
        if self.finished and self.sent == self.end and not self.exit_sent:
            self.exit_sent = True
            stream.send(p.json_frame(p.EXIT, {"exit_code": self.exit_code}))
        self.rewatch()

    def trim(self) -> None:
        """A terminal keeps its last SCROLLBACK bytes; an agent what svc has not acknowledged."""
        if self.kind == "pty":
            # Cut seldom: each cut copies the scrollback (attach never reads further back).
            if self.end - self.base > TRIM_AT:
                self._keep_from(self.end - SCROLLBACK)
        elif self.acked == self.end and self.end > self.base:
            os.ftruncate(self.journal, 0)
            self.base = self.end
        elif self.acked - self.base > COMPACT_AT:
            self._keep_from(self.acked)

    def _keep_from(self, offset: int) -> None:
        rest = os.pread(self.journal, self.end - offset, offset - self.base)
        fresh = self.dir / "out.new"
        fd = _open_journal(fresh)
        _write_all(fd, rest)
        os.replace(fresh, self.journal_path)
        os.close(self.journal)
        self.journal, self.base = fd, offset

    def on_eof(self) -> None:
        self.eof = True
        self.rewatch()
        self.finish_if_done()

    # --- input -----------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self.finished or self.in_fd < 0:
            return
        if self.kind == "pty" and len(self.pending) + len(data) > INPUT_LIMIT:
            return  # a terminal that reads nothing: what a real one would do with more keys
        self.pending += data
        self.on_input_writable()

    def on_input_writable(self) -> None:
        try:
            written = os.write(self.in_fd, self.pending) if self.pending else 0
        except BlockingIOError:
            written = 0
        except OSError:  # the process closed its stdin or ended: what it would not read
            written = len(self.pending)
        del self.pending[:written]
        if self.closing_input and not self.pending and self.kind == "pipe" and self.in_fd >= 0:
            self.holder.loop.watch(self.in_fd, None, None)
            os.close(self.in_fd)
            self.in_fd = -1
        self.rewatch()

    def end_input(self) -> None:
        """EOF on an agent's stdin once what svc sent before is written: well-behaved agents
        exit at EOF, with their own status."""
        self.closing_input = True
        self.on_input_writable()

    def resize(self, cols: int, rows: int) -> None:
        if self.kind == "pty" and not self.finished:
            with contextlib.suppress(OSError):
                set_size(self.out_fd, cols, rows)

    def ack(self, offset: int) -> None:
        self.acked = max(self.acked, min(offset, self.end))
        self.trim()

    # --- streams ---------------------------------------------------------------------------

    def attach(self, conn: Stream, offset: int, *, lease: bool = False) -> dict[str, Any]:
        """`lease`: svc asked to read the PTY itself, and its answer can carry the PTY."""
        if self.stream is not None and self.stream is not conn:
            self.stream.close()  # an svc that went away, or one attaching again from its lease
        self.stream, conn.session = conn, self
        self.generation += 1
        start = self.acked if offset < 0 else offset
        if self.kind == "pty":  # a terminal's scrollback is its last SCROLLBACK bytes
            start = max(start, self.end - SCROLLBACK)
        self.sent = min(max(start, self.base), self.end)
        self.exit_sent = False
        answer: dict[str, Any] = {
            "ok": True,
            "offset": self.sent,
            "generation": self.generation,
            "pid": self.pid,
            "exit_code": self.exit_code if self.finished else None,
        }
        if lease and self.kind == "pty" and self.exit_code is None and not self.eof:
            # From `end` on svc reads the PTY: the holder sends what is before it, then stops.
            self.lease = Lease(self.journal_path)
            answer["lease"] = {"end": self.end, "at": self.end - self.base, "until": TRIM_AT}
            self.rewatch()
        return answer

    def detach(self) -> None:
        self.stream = None
        self.end_lease()
        if not self.finished:
            self.rewatch()

    def end_lease(self) -> None:
        """svc no longer reads the PTY. It had the journal up to its end; what it left in the
        pipe (moved out of the PTY, not into the journal: it died between its two splices, or
        the second failed) is journaled now, and sent to it should it go on in frames."""
        if self.lease is None:
            return
        lease, self.lease = self.lease, None
        self.end = self.sent = self.base + os.fstat(self.journal).st_size
        if left := lease.drain():
            _write_all(self.journal, left)
            self.end += len(left)
        self.trim()

    def lease_back(self) -> None:
        self.end_lease()
        self.pump()

    # --- end -------------------------------------------------------------------------------

    def on_process_exit(self) -> None:
        self.holder.loop.watch(self.pidfd, None, None)
        os.close(self.pidfd)
        self.exit_code = procs.exit_code_of(self.proc.wait())
        if self.lease is not None and self.stream is not None:
            # Once svc gives it back, the holder reads what is left and sends the exit.
            self.stream.send(p.frame(p.LEASE_END, b""))
        # The leader is gone: hang up what it left behind (a terminal's jobs, an agent's helpers).
        if procs.signal_session(self.pid, signal.SIGHUP):
            procs.signal_session(self.pid, signal.SIGCONT)
            self.holder.loop.later(
                HANGUP_GRACE_S, lambda: procs.signal_session(self.pid, signal.SIGKILL)
            )
        self.holder.loop.later(EOF_GRACE_S, self.give_up_on_eof)
        self.finish_if_done()

    def give_up_on_eof(self) -> None:
        """A process that left the session (`setsid cmd &`) may hold the PTY open forever."""
        if self.lease is not None:  # svc still reads it: ask again once it has given it back
            self.holder.loop.later(EOF_GRACE_S, self.give_up_on_eof)
            return
        if not self.eof:
            self.on_output()  # what is still buffered
            if not self.eof:
                self.on_eof()

    def finish_if_done(self) -> None:
        if self.finished or not self.eof or self.exit_code is None:
            return
        self.finished = True
        self.pending.clear()
        for fd in {self.out_fd, self.in_fd}:
            self.holder.loop.watch(fd, None, None)
            with contextlib.suppress(OSError):
                os.close(fd)
        self.out_fd = self.in_fd = -1
        self.holder.notify({"event": "exit", "id": self.id, "exit_code": self.exit_code})
        self.pump()

    def hang_up(self) -> None:
        if not self.finished and self.exit_code is None:
            procs.signal_session(self.pid, signal.SIGHUP)
            procs.signal_session(self.pid, signal.SIGCONT)

    def forget(self) -> None:
        if self.stream is not None:
            self.stream.session = None
            self.stream.close()
        self.end_lease()
        os.close(self.journal)
        for name in ("out", "out.new"):
            with contextlib.suppress(FileNotFoundError):
                (self.dir / name).unlink()
        with contextlib.suppress(OSError):
            self.dir.rmdir()

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "pid": self.pid,
            "exit_code": self.exit_code if self.finished else None,
            "finished": self.finished,
            "base": self.base,
            # Under a lease svc lengthens the journal itself.
            "end": self.base + os.fstat(self.journal).st_size if self.lease else self.end,
            "acked": self.acked,
            "attached": self.stream is not None,
        }


def _open_journal(path: Path) -> int:
    # Appending: after the file is emptied the next output goes to its start, not past a hole.
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
