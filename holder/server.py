"""The holder process: a selectors loop over its socket, its children's PTYs and pipes.

Each held process writes to a journal (`sessions/<id>/out`, 0600): a terminal's last 2 MiB (its
scrollback: older output is cut away once the file holds 16 MiB), an ACP agent's every byte
until svc acknowledges it has stored what they said (then the file is emptied). svc attaches to
a session's stream from an offset and gets the journal from there, then the live output. While
svc is attached a terminal is read only as fast as svc takes its output, as a real terminal
follows its reader; while no svc is attached it is read freely into its scrollback. An agent is
always read: its messages must not wait on svc.

Run: `python -m holder <dir>`. It exits by itself a few seconds after it holds nothing and
nobody is connected; SIGTERM hangs up every held process and exits.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import logging
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from holder import paths, procs
from holder import protocol as p

logger = logging.getLogger("holder")

SCROLLBACK = 2 << 20
TRIM_AT = 8 * SCROLLBACK  # a terminal's journal is cut back to its scrollback past this
READ_SIZE = 64 << 10
READS_PER_WAKE = 16
BACKLOG = 256 << 10  # output queued for svc before a terminal waits for it
INPUT_LIMIT = 4 << 20  # keys typed ahead into a terminal that does not read them
COMPACT_AT = 4 << 20  # an agent's journal is rewritten from svc's offset past this
IDLE_EXIT_S = 3.0
EOF_GRACE_S = 2.0  # for a process that left the session still holding the PTY
HANGUP_GRACE_S = 0.5
SHUTDOWN_GRACE_S = 1.0


class Loop:
    """The selector with one reader and one writer callback per fd, and timers."""

    def __init__(self) -> None:
        self.sel = selectors.DefaultSelector()
        self.handlers: dict[int, tuple[Callable[[], None] | None, Callable[[], None] | None]] = {}
        self.masks: dict[int, int] = {}
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def watch(
        self, fd: int, on_read: Callable[[], None] | None, on_write: Callable[[], None] | None
    ) -> None:
        mask = (selectors.EVENT_READ if on_read else 0) | (selectors.EVENT_WRITE if on_write else 0)
        known = self.masks.get(fd, 0)
        if not mask:
            if known:
                self.sel.unregister(fd)
                del self.handlers[fd], self.masks[fd]
            return
        self.handlers[fd] = (on_read, on_write)
        if mask == known:
            return  # a system call per output chunk saved: watching is asked for often
        self.masks[fd] = mask
        if known:
            self.sel.modify(fd, mask)
        else:
            self.sel.register(fd, mask)

    def later(self, delay: float, callback: Callable[[], None]) -> None:
        self.timers.append((time.monotonic() + delay, callback))

    def run_once(self, timeout: float) -> None:
        if self.timers:
            timeout = max(0.0, min(timeout, min(t for t, _ in self.timers) - time.monotonic()))
        for key, events in self.sel.select(timeout):
            on_read, on_write = self.handlers.get(key.fd, (None, None))
            if events & selectors.EVENT_READ and on_read:
                on_read()
            # The read may have closed or unwatched it.
            on_read, on_write = self.handlers.get(key.fd, (None, None))
            if events & selectors.EVENT_WRITE and on_write:
                on_write()
        now = time.monotonic()
        due = [t for t in self.timers if t[0] <= now]
        self.timers = [t for t in self.timers if t[0] > now]
        for _, callback in due:
            callback()


class Conn:
    """One client connection: a control connection, or a session's stream once attached."""

    def __init__(self, holder: Holder, sock: socket.socket) -> None:
        self.holder, self.sock = holder, sock
        self.fd = sock.fileno()
        self.inbuf = bytearray()
        self.out = bytearray()
        self.session: Held | None = None
        self.control = False  # said hello: hears of every session's exit
        self.closed = False
        holder.loop.watch(self.fd, self.on_readable, None)

    def send(self, data: bytes) -> None:
        if self.closed:
            return
        self.out += data
        self.flush()

    def reply(self, message: dict[str, Any]) -> None:
        self.send(p.json_frame(p.JSON, message))

    def flush(self) -> None:
        if self.out:
            try:
                sent = self.sock.send(self.out)
            except BlockingIOError:
                sent = 0
            except OSError:
                self.close()
                return
            del self.out[:sent]
        self.holder.loop.watch(self.fd, self.on_readable, self.on_writable if self.out else None)

    def on_writable(self) -> None:
        self.flush()
        if self.session is not None and len(self.out) < BACKLOG:
            self.session.pump()

    def on_readable(self) -> None:
        try:
            data = self.sock.recv(READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        self.inbuf += data
        try:
            frames = p.split_frames(self.inbuf)
        except ValueError as exc:
            logger.warning("closing a connection that sent a bad frame: %s", exc)
            self.close()
            return
        for kind, payload in frames:
            if self.closed:
                return
            self.holder.on_frame(self, kind, payload)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.holder.loop.watch(self.fd, None, None)
        with contextlib.suppress(OSError):
            self.sock.close()
        self.holder.conns.discard(self)
        if self.session is not None and self.session.stream is self:
            self.session.detach()


class Held:
    """One held process, its journal and (while svc is attached) its stream."""

    def __init__(self, holder: Holder, sid: str, kind: str) -> None:
        self.holder, self.id, self.kind = holder, sid, kind
        self.dir = paths.private_dir(paths.session_dir(holder.dir, sid))
        self.journal_path = self.dir / "out"
        self.journal = _open_journal(self.journal_path)
        self.base = self.end = self.acked = 0  # offsets in the output since the start
        self.generation = 0
        self.stream: Conn | None = None
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

    def spawn(self, request: dict[str, Any]) -> int:
        argv, env, cwd = list(request["argv"]), dict(request["env"]), str(request["cwd"])
        if self.kind == "pty":
            master, slave = os.openpty()
            set_size(slave, int(request.get("cols", 80)), int(request.get("rows", 24)))
            try:
                proc = subprocess.Popen(
                    argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, close_fds=True
                )
            except OSError:
                os.close(master)
                raise
            finally:
                os.close(slave)
            self.out_fd = self.in_fd = master
        else:
            proc = self._spawn_pipes(argv, env, cwd, request.get("stderr") or os.devnull)
        self.proc, self.pid = proc, proc.pid
        self.base = self.end = self.acked = self.sent = int(request.get("offset", 0))
        if preface := base64.b64decode(request.get("preface") or ""):
            _write_all(self.journal, preface)
            self.end += len(preface)
        os.set_blocking(self.out_fd, False)
        os.set_blocking(self.in_fd, False)
        self.pidfd = os.pidfd_open(self.pid)
        self.holder.loop.watch(self.pidfd, self.on_process_exit, None)
        self.rewatch()
        return self.pid

    def _spawn_pipes(
        self, argv: list[str], env: dict[str, str], cwd: str, stderr_path: str
    ) -> subprocess.Popen[bytes]:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        try:
            with open(stderr_path, "ab") as stderr:
                proc = subprocess.Popen(
                    argv,
                    stdin=stdin_r,
                    stdout=stdout_w,
                    stderr=stderr,
                    cwd=cwd,
                    env=env,
                    close_fds=True,
                    start_new_session=True,  # its own session: a stop reaches every descendant
                )
        except OSError:
            os.close(stdin_w)
            os.close(stdout_r)
            raise
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        self.out_fd, self.in_fd = stdout_r, stdin_w
        return proc

    # --- output ----------------------------------------------------------------------------

    def reading(self) -> bool:
        if self.eof:
            return False
        if self.kind != "pty" or self.stream is None:
            return True
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
        data = b"".join(chunks)
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
            self.stream.send(p.frame(p.OUTPUT, data))
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
            stream.send(p.frame(p.OUTPUT, data))
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

    def attach(self, conn: Conn, offset: int) -> dict[str, Any]:
        if self.stream is not None and self.stream is not conn:
            self.stream.close()  # an svc that went away without its socket closing yet
        self.stream, conn.session = conn, self
        self.generation += 1
        start = self.acked if offset < 0 else offset
        if self.kind == "pty":  # a terminal's scrollback is its last SCROLLBACK bytes
            start = max(start, self.end - SCROLLBACK)
        self.sent = min(max(start, self.base), self.end)
        self.exit_sent = False
        return {
            "ok": True,
            "offset": self.sent,
            "generation": self.generation,
            "pid": self.pid,
            "exit_code": self.exit_code if self.finished else None,
        }

    def detach(self) -> None:
        self.stream = None
        if not self.finished:
            self.rewatch()

    # --- end -------------------------------------------------------------------------------

    def on_process_exit(self) -> None:
        self.holder.loop.watch(self.pidfd, None, None)
        os.close(self.pidfd)
        self.exit_code = procs.exit_code_of(self.proc.wait())
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
            "end": self.end,
            "acked": self.acked,
            "attached": self.stream is not None,
        }


class Holder:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.loop = Loop()
        self.conns: set[Conn] = set()
        self.sessions: dict[str, Held] = {}
        self.stopping = False
        self.idle_since = time.monotonic()

    # --- the socket ------------------------------------------------------------------------

    def bind(self) -> None:
        paths.private_dir(self.dir)
        self.lock = os.open(self.dir / "holder.lock", os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + 5
        while True:  # a holder on its way out still holds it for a moment
            try:
                fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise SystemExit("another holder runs for this folder") from None
                time.sleep(0.05)
        self.socket_path = paths.socket_path(self.dir)
        paths.private_dir(self.socket_path.parent)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self.listener.bind(os.fspath(self.socket_path))
        finally:
            os.umask(old)
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.loop.watch(self.listener.fileno(), self.on_accept, None)
        (self.dir / "holder.pid").write_text(f"{os.getpid()}\n")

    def on_accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except BlockingIOError:
            return
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
        if uid != os.getuid():  # the folder's mode already keeps others out; this says so twice
            logger.warning("refused a connection from uid %d", uid)
            sock.close()
            return
        sock.setblocking(False)
        self.conns.add(Conn(self, sock))

    # --- requests --------------------------------------------------------------------------

    def on_frame(self, conn: Conn, kind: bytes, payload: bytes) -> None:
        held = conn.session
        if held is not None:
            self.on_stream_frame(held, kind, payload)
            return
        if kind != p.JSON:
            conn.close()
            return
        request: dict[str, Any] = {}
        try:
            request = json.loads(payload)
            answer = self.handle(conn, request)
        except Exception as exc:  # a bad request answers an error; the holder stays up
            request = request if isinstance(request, dict) else {}
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        if answer is not None:
            conn.reply({**answer, "rid": request.get("rid")})

    def on_stream_frame(self, held: Held, kind: bytes, payload: bytes) -> None:
        if kind == p.INPUT:
            held.write(payload)
        elif kind == p.RESIZE:
            size = json.loads(payload)
            held.resize(int(size["cols"]), int(size["rows"]))
        elif kind == p.ACK:
            held.ack(int(json.loads(payload)["offset"]))
        elif kind == p.END_INPUT:
            held.end_input()

    def handle(self, conn: Conn, request: dict[str, Any]) -> dict[str, Any] | None:
        op = request.get("op")
        if op == "hello":
            conn.control = True
            return {"ok": True, "version": p.VERSION, "pid": os.getpid()}
        if op == "list":
            return {"ok": True, "sessions": [h.describe() for h in self.sessions.values()]}
        if op == "spawn":
            return self.spawn(request)
        held = self.sessions.get(str(request.get("id")))
        if held is None:
            return {"ok": False, "error": f"no held session {request.get('id')!r}"}
        if op == "attach":
            answer = {**held.attach(conn, int(request.get("offset", 0))), "rid": request.get("rid")}
            hello = p.json_frame(p.JSON, answer)  # before the first output frame
            if held.kind == "pty" and not held.finished and not conn.out:
                # The PTY itself goes with it: svc types and resizes straight into it (a
                # keystroke's echo then crosses the holder once, not twice).
                socket.send_fds(conn.sock, [hello], [held.in_fd])
            else:
                conn.send(hello)
            held.pump()
            return None
        if op == "forget":
            if not held.finished:
                return {"ok": False, "error": "the process is still running"}
            del self.sessions[held.id]
            held.forget()
            return {"ok": True}
        if op == "hangup":
            held.hang_up()
            return {"ok": True}
        return {"ok": False, "error": f"unknown op {op!r}"}

    def spawn(self, request: dict[str, Any]) -> dict[str, Any]:
        sid, kind = str(request["id"]), str(request.get("kind"))
        if kind not in ("pty", "pipe"):
            return {"ok": False, "error": "kind must be pty or pipe"}
        if self.stopping:
            return {"ok": False, "error": "the holder is stopping"}
        if sid in self.sessions:
            return {"ok": False, "error": f"session {sid} is held already"}
        held = Held(self, sid, kind)
        try:
            pid = held.spawn(request)
        except Exception:
            held.finished = True
            held.forget()
            raise
        self.sessions[sid] = held
        return {"ok": True, "pid": pid}

    def notify(self, notice: dict[str, Any]) -> None:
        """To the control connections (those that said hello), never to one about to attach: its
        first frame must be the attach's answer."""
        for conn in list(self.conns):
            if conn.session is None and conn.control:
                conn.reply(notice)

    # --- life ------------------------------------------------------------------------------

    def stop(self) -> None:
        """SIGTERM: hang up every held process, SIGKILL what is left a moment later, exit."""
        if self.stopping:
            return
        self.stopping = True
        # The next svc starts a holder of its own (it waits on the lock until this one is gone).
        self._close_listener()
        for held in self.sessions.values():
            held.hang_up()
        self.loop.later(SHUTDOWN_GRACE_S, self._kill_the_rest)

    def _kill_the_rest(self) -> None:
        for held in self.sessions.values():
            if not held.finished:
                procs.signal_session(held.pid, signal.SIGKILL)
        self.loop.later(SHUTDOWN_GRACE_S, self._exit)

    def _exit(self) -> None:
        raise SystemExit(0)

    def idle(self) -> bool:
        if self.sessions or self.conns:
            self.idle_since = time.monotonic()
            return False
        return time.monotonic() - self.idle_since > IDLE_EXIT_S

    def done(self) -> bool:
        return self.stopping and all(h.finished for h in self.sessions.values())

    def serve(self) -> None:
        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        signal.set_wakeup_fd(wake_w.fileno())
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: None)  # handled below, through the wake-up socket
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        self.loop.watch(wake_r.fileno(), lambda: self._on_signal(wake_r), None)
        try:
            while not self.done():
                if self.idle():
                    self.on_accept()  # a client that connected since the last look keeps it
                    if self.idle():
                        break
                self.loop.run_once(1.0)
        finally:
            self._close_listener()

    def _close_listener(self) -> None:
        if self.listener.fileno() >= 0:
            self.loop.watch(self.listener.fileno(), None, None)
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            self.listener.close()

    def _on_signal(self, wake: socket.socket) -> None:
        with contextlib.suppress(BlockingIOError):
            signals = wake.recv(64)
            if any(s in (signal.SIGTERM, signal.SIGINT) for s in signals):
                self.stop()


def _open_journal(path: Path) -> int:
    # Appending: after the file is emptied the next output goes to its start, not past a hole.
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m holder <dir>", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s holder[%(process)d] %(levelname)s %(message)s"
    )
    holder = Holder(Path(argv[1]).resolve())
    holder.bind()
    logger.info("holding sessions for %s", holder.dir)
    holder.serve()
    logger.info("nothing left to hold: exiting")
    return 0
