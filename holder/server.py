"""The holder process: a selectors loop over its socket, its children's PTYs and pipes.

Each held process writes to a journal (`sessions/<id>/out`, 0600): a terminal's last 2 MiB (its
scrollback: older output is cut away once the file holds 16 MiB), an ACP agent's every byte
until svc acknowledges it has stored what they said (then the file is emptied). svc attaches to
a session's stream from an offset and gets the journal from there, then the live output (or,
for a terminal, reads its PTY itself under a lease: holder/lease.py). While svc is attached a
terminal is read only as fast as svc takes its output, as a real terminal follows its reader;
while no svc is attached it is read freely into its scrollback. An agent is always read: its
messages must not wait on svc.

A connection counts once its first frame carries the holder's key (holder/key.py), from a peer
of this user's in the holder's network namespace; every frame is checked (holder/checks.py) and
a bad one ends its own connection, never the holder.

Run: `python -m holder <dir>`. It exits by itself a few seconds after it holds nothing and
nobody is connected; SIGTERM hangs up every held process and exits.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from holder import checks, paths, procs
from holder import key as holder_key
from holder import protocol as p
from holder.conn import Conn
from holder.held import Held
from holder.loop import Loop

logger = logging.getLogger("holder")

IDLE_EXIT_S = 3.0
SHUTDOWN_GRACE_S = 1.0
REFUSED = (
    "refused: a connection's first request must carry this holder's key (holder.key beside its "
    "socket); an svc older than the holder sends none"
)


class Holder:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.loop = Loop()
        self.conns: set[Conn] = set()
        self.sessions: dict[str, Held] = {}
        self.stopping = False
        self.idle_since = time.monotonic()
        self.key = ""
        self.complaints = checks.Complaints()

    # --- the socket ------------------------------------------------------------------------

    def bind(self) -> None:
        paths.private_dir(self.dir)
        self._lock()
        # Both before listening: whoever reaches the socket finds this holder's pid and key.
        (self.dir / paths.PID).write_text(f"{os.getpid()}\n")
        self.key = holder_key.make(self.dir)
        self.socket_path = self.dir / paths.SOCKET
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dir_fd = paths.open_private_dir(self.dir)  # its address is short however deep the home
        old = os.umask(0o177)
        try:
            self.listener.bind(paths.in_dir(dir_fd, paths.SOCKET))
        finally:
            os.umask(old)
            os.close(dir_fd)
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.loop.watch(self.listener.fileno(), self.on_accept, None)

    def _lock(self) -> None:
        self.lock = os.open(self.dir / paths.LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + 5
        while True:  # a holder on its way out still holds it for a moment
            try:
                fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise SystemExit("another holder runs for this folder") from None
                time.sleep(0.05)

    def on_accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except BlockingIOError:
            return
        if problem := checks.peer_problem(sock):
            self.complaints.say("refused a peer", problem)
            sock.close()
            return
        sock.setblocking(False)
        self.conns.add(Conn(self, sock))

    # --- requests --------------------------------------------------------------------------

    def on_first_frame(self, conn: Conn, kind: bytes, payload: bytes) -> None:
        """A connection's first frame: a request carrying the key, or an error answer and the
        end of the connection."""
        try:
            request = checks.json_of(payload) if kind == p.JSON else {}
        except checks.BadFrame:
            request = {}
        if not holder_key.matches(request.get("key"), self.key):
            self.complaints.say("refused a connection", "its first frame carried no valid key")
            conn.reply({"ok": False, "error": REFUSED, "rid": request.get("rid")})
            conn.close()
            return
        conn.authed = True
        self.on_request(conn, request)

    def on_frame(self, conn: Conn, kind: bytes, payload: bytes) -> None:
        """Any later frame. checks.BadFrame (or any failure) ends this connection alone."""
        if conn.session is not None:
            self.on_stream_frame(conn.session, kind, payload)
        elif kind == p.JSON:
            self.on_request(conn, checks.json_of(payload))
        else:
            raise checks.BadFrame(f"a {kind!r} frame on a connection attached to no session")

    def on_bad_frame(self, conn: Conn, exc: Exception) -> None:
        if isinstance(exc, ValueError):  # checks.BadFrame, or a frame larger than allowed
            self.complaints.say("closed a connection that sent a bad frame", str(exc))
        else:  # the holder's own failure: with its traceback, still one connection's end only
            logger.error("closing a connection whose frame failed", exc_info=exc)
        if conn.session is None:
            conn.reply({"ok": False, "error": f"bad frame: {exc}"})
        conn.close()

    def on_request(self, conn: Conn, request: dict[str, Any]) -> None:
        try:
            answer = self.handle(conn, request)
        except Exception as exc:  # a request it cannot carry out answers an error; it stays up
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        if answer is not None:
            conn.reply({**answer, "rid": request.get("rid")})

    def on_stream_frame(self, held: Held, kind: bytes, payload: bytes) -> None:
        if kind == p.INPUT:
            held.write(payload)
        elif kind == p.RESIZE:
            held.resize(*checks.size_of(payload))
        elif kind == p.ACK:
            held.ack(checks.ack_of(payload))
        elif kind == p.END_INPUT:
            held.end_input()
        elif kind == p.LEASE_BACK:
            held.lease_back()
        else:
            raise checks.BadFrame(f"a {kind!r} frame on a session's stream")

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
            self.attach(conn, held, request)
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

    def attach(self, conn: Conn, held: Held, request: dict[str, Any]) -> None:
        offset = checks.integer(request, "offset", -1, checks.OFFSET_MAX, 0)
        passes_pty = held.kind == "pty" and not held.finished and not conn.out
        wants_lease = passes_pty and request.get("lease") is True
        answer = held.attach(conn, offset, lease=wants_lease)
        hello = p.json_frame(p.JSON, {**answer, "rid": request.get("rid")})  # before any output
        if passes_pty:
            # The PTY itself goes with it: svc types and resizes straight into it (a keystroke's
            # echo then crosses the holder once, not twice), and under a lease reads it too.
            lease = held.lease
            try:
                socket.send_fds(conn.sock, [hello], [held.in_fd, *(lease.handed if lease else ())])
            except OSError:
                conn.close()  # svc went away meanwhile: the lease, if any, ends with it
                return
            finally:
                if lease is not None:
                    lease.handed_over()
        else:
            conn.send(hello)
        held.pump()

    def spawn(self, request: dict[str, Any]) -> dict[str, Any]:
        spec = checks.spawn_of(request)  # all checked before anything starts
        if self.stopping:
            return {"ok": False, "error": "the holder is stopping"}
        if spec.id in self.sessions:
            return {"ok": False, "error": f"session {spec.id} is held already"}
        held = Held(self, spec.id, spec.kind)
        try:
            pid = held.spawn(spec)
        except Exception:
            held.finished = True
            held.forget()
            raise
        self.sessions[spec.id] = held
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
