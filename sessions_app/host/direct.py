"""Hosted processes as svc's own children, behind the holder stream's interface.

What svc did before holders (contract §17), kept for `SVC_HOLDER=0` and for when no holder can
be started: the process ends with svc. `make bench` measures the holder against this path. The
frames are the holder's (holder/protocol.py), so a session reads both the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from typing import BinaryIO

from holder import procs
from holder import protocol as p
from holder.held import READ_SIZE, set_size
from holder.streams import PtyInput

EOF_GRACE_S = 2.0  # for a process that left the session still holding the PTY
HANGUP_GRACE_S = 0.5
PIPE_LIMIT = 50 << 20  # one ACP message may carry images or whole files

Frame = tuple[bytes, bytes]


def _exit_frame(code: int) -> Frame:
    return p.EXIT, json.dumps({"exit_code": code}).encode()


async def _hang_up(pid: int) -> None:
    """What the holder does when a session's leader ends: its jobs and helpers go with it."""
    if procs.signal_session(pid, signal.SIGHUP):
        procs.signal_session(pid, signal.SIGCONT)
        await asyncio.sleep(HANGUP_GRACE_S)
        procs.signal_session(pid, signal.SIGKILL)


class DirectPty:
    offset, generation, held = 0, 1, False

    def __init__(
        self, argv: tuple[str, ...], env: dict[str, str], cwd: str, cols: int, rows: int
    ) -> None:
        master, slave = os.openpty()
        set_size(slave, cols, rows)
        try:
            self.proc = subprocess.Popen(
                argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, close_fds=True
            )
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self.fd, self.pid = master, self.proc.pid
        os.set_blocking(master, False)
        self._loop = asyncio.get_running_loop()
        self._exited = asyncio.Event()
        self._code = 0
        self._wake: asyncio.Future[None] | None = None
        self._eof_by = 0.0
        self._input = PtyInput(master)  # typed-ahead keys wait as they do through the holder
        self._finished = False
        self._pidfd = os.pidfd_open(self.pid)
        self._loop.add_reader(self._pidfd, self._on_process_exit)

    def _on_process_exit(self) -> None:
        self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._code = procs.exit_code_of(self.proc.wait())
        self._eof_by = self._loop.time() + EOF_GRACE_S
        self._exited.set()
        self._loop.create_task(_hang_up(self.pid))
        self._loop.call_later(EOF_GRACE_S, self._wake_reader)
        self._wake_reader()

    def _wake_reader(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def read(self) -> Frame | None:
        if self._finished:
            return None
        while True:
            try:
                data: bytes | None = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                data = None
            except OSError:  # EIO: every slave fd is closed
                data = b""
            if data:
                return p.OUTPUT, data
            if data == b"" or (self._exited.is_set() and self._loop.time() >= self._eof_by):
                break
            self._wake = self._loop.create_future()
            self._loop.add_reader(self.fd, self._wake_reader)
            try:
                await self._wake
            finally:
                self._loop.remove_reader(self.fd)
        await self._exited.wait()
        self._finish()
        return _exit_frame(self._code)

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            self._input.close()

    def write(self, data: bytes) -> None:
        self._input.write(data)

    def resize(self, cols: int, rows: int) -> None:
        self._input.resize(cols, rows)  # a no-op once closed: the fd number may be reused

    def ack(self, offset: int) -> None:
        pass  # nothing is journaled

    def close(self) -> None:
        pass  # the PTY is read until its process ends

    def close_input(self) -> None:
        pass  # a terminal's input ends when its process does


def _append(path: str) -> BinaryIO:
    """The agent's stderr, kept for the user (stdout is the protocol)."""
    return open(path, "ab")  # closed by the caller's `with`


class DirectPipes:
    generation, held = 1, False

    def __init__(self, proc: asyncio.subprocess.Process, offset: int) -> None:
        self.proc, self.pid, self.offset = proc, proc.pid, offset
        self._finished = False

    @classmethod
    async def spawn(
        cls, argv: tuple[str, ...], env: dict[str, str], cwd: str, stderr_path: str, offset: int
    ) -> DirectPipes:
        with _append(stderr_path or os.devnull) as stderr:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                env=env,
                start_new_session=True,  # its own session: a stop reaches every descendant
                limit=PIPE_LIMIT,
            )
        return cls(proc, offset)

    async def read(self) -> Frame | None:
        if self._finished:
            return None
        assert self.proc.stdout is not None
        data = await self.proc.stdout.read(READ_SIZE)
        if data:
            return p.OUTPUT, data
        code = procs.exit_code_of(await self.proc.wait())
        await _hang_up(self.pid)
        self._finished = True
        return _exit_frame(code)

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.write(data)

    def resize(self, cols: int, rows: int) -> None:
        pass

    def ack(self, offset: int) -> None:
        pass

    def close(self) -> None:
        pass

    def close_input(self) -> None:
        """EOF on the agent's stdin: well-behaved agents exit at EOF, with their own status."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
