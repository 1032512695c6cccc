"""svc's side of the holder: connect (starting a holder when none answers), spawn, list, attach.

One control connection carries requests, their answers and the holder's exit notices; each
attached session has a connection of its own, so a slow terminal viewer holds back only its own
session's output. Every connection is checked before anything is sent on it, and its first frame
carries the holder's key (holder/reach.py).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from holder import paths
from holder import protocol as p
from holder.reach import HolderError, Reached, reach
from holder.streams import Attached, Frames, Stream

__all__ = ["HolderClient", "HolderError", "Stream"]

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 5.0
STREAM_LIMIT = 1 << 20

OnExit = Callable[[str, int], None]


class HolderClient:
    def __init__(self, directory: Path, on_exit: OnExit) -> None:
        self.dir = paths.canonical(directory)  # the holder's own name for it
        self.on_exit = on_exit
        self._writer: asyncio.StreamWriter | None = None
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._reading: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.holder_pid = 0

    def running(self) -> bool:
        """Whether a holder may answer on this folder's socket (without starting one)."""
        old = paths.legacy_socket_dir(self.dir)
        return (self.dir / paths.SOCKET).exists() or (
            old is not None and (old / paths.SOCKET).exists()
        )

    async def connect(self, *, start: bool) -> bool:
        """Connect to the holder; start one first when none answers and `start`. False when
        none answers and none was to be started."""
        async with self._lock:
            if self._writer is not None and not self._writer.is_closing():
                return True
            reached = await self._open(start=start)
            if reached is None:
                return False
            reader, self._writer = await asyncio.open_unix_connection(
                sock=reached.sock, limit=STREAM_LIMIT
            )
            self._reading = asyncio.get_running_loop().create_task(self._read(reader))
            hello = self._send("hello", key=reached.key)  # the first frame, before any other
        self._check_hello(await self._answer(hello, "hello"))
        return True

    def _check_hello(self, hello: dict[str, Any]) -> None:
        version = hello.get("version")
        if version not in p.SPOKEN:
            assert self._writer is not None
            self._writer.close()
            raise HolderError(f"the holder speaks version {version}, not one of {p.SPOKEN}")
        self.holder_pid = int(hello["pid"])
        if version < p.VERSION:
            logger.warning(
                "the holder (pid %d) was started by an older svc and takes no key (protocol "
                "version %s): it is used as it is, and the next holder, once it has exited "
                "(3 s after it holds nothing), is of version %d",
                self.holder_pid,
                version,
                p.VERSION,
            )

    async def _open(self, *, start: bool) -> Reached | None:
        try:
            return await reach(self.dir, legacy=True)
        except (FileNotFoundError, ConnectionRefusedError):
            if not start:
                return None
        await asyncio.to_thread(self._start_holder)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT_S
        while True:
            try:
                return await reach(self.dir)
            except (FileNotFoundError, ConnectionRefusedError):
                if loop.time() > deadline:
                    log = self.dir / paths.LOG
                    raise HolderError(f"the holder did not start; see {log}") from None
                await asyncio.sleep(0.02)

    def _start_holder(self) -> None:
        """`setsid -f`: the holder leads a session of its own and is nobody's child, so neither a
        signal to svc's group nor svc's end reaches it, and it leaves no zombie behind."""
        paths.private_dir(self.dir)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": os.fspath(ROOT),
            "SVC_HOME": os.fspath(self.dir.parent),  # whose it is, for ps and for tests
        }
        with open(self.dir / paths.LOG, "ab") as log:
            os.chmod(self.dir / paths.LOG, 0o600)
            subprocess.run(
                ["setsid", "-f", sys.executable, "-m", "holder", os.fspath(self.dir)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.dir,
                env=env,
                check=True,
                timeout=START_TIMEOUT_S,
            )

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                kind, size = p.HEADER.unpack(await reader.readexactly(p.HEADER.size))
                message = json.loads(await reader.readexactly(size))
                if kind != p.JSON:
                    continue
                if message.get("event") == "exit":
                    self.on_exit(str(message["id"]), int(message["exit_code"]))
                elif (future := self._answers.pop(message.get("rid"), None)) is not None and (
                    not future.done()
                ):
                    future.set_result(message)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            for future in self._answers.values():
                if not future.done():
                    future.set_exception(HolderError("the holder closed the connection"))
            self._answers.clear()
            if self._writer is not None:
                self._writer.close()

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        return await self._answer(self._send(op, **fields), op)

    def _send(self, op: str, **fields: Any) -> asyncio.Future[dict[str, Any]]:
        if self._writer is None or self._writer.is_closing():
            raise HolderError("not connected to a holder")
        rid = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[rid] = future
        self._writer.write(p.json_frame(p.JSON, {"op": op, "rid": rid, **fields}))
        return future

    @staticmethod
    async def _answer(future: asyncio.Future[dict[str, Any]], op: str) -> dict[str, Any]:
        answer = await future
        if not answer.get("ok"):
            raise HolderError(answer.get("error") or f"the holder refused {op}")
        return answer

    async def sessions(self) -> list[dict[str, Any]]:
        return list((await self.request("list"))["sessions"])

    async def spawn(
        self,
        session_id: str,
        *,
        kind: str,
        argv: tuple[str, ...],
        env: dict[str, str],
        cwd: str,
        cols: int = 80,
        rows: int = 24,
        stderr: str = "",
        offset: int = 0,
        preface: bytes = b"",
    ) -> int:
        """Start a process the holder holds; its output's offsets start at `offset` (a resumed
        chat's go on from its earlier process's, so they never repeat), and its output begins
        with `preface` (a resumed terminal's old scrollback)."""
        await self.connect(start=True)
        answer = await self.request(
            "spawn",
            id=session_id,
            kind=kind,
            argv=list(argv),
            env=env,
            cwd=cwd,
            cols=cols,
            rows=rows,
            stderr=stderr,
            offset=offset,
            preface=base64.b64encode(preface).decode(),
        )
        return int(answer["pid"])

    def journal_tail(self, session_id: str, size: int) -> bytes:
        """The last `size` bytes a holder journaled for a session it no longer holds."""
        path = paths.session_dir(self.dir, session_id) / "out"
        try:
            with path.open("rb") as journal:
                journal.seek(max(0, path.stat().st_size - size))
                return journal.read()
        except FileNotFoundError:
            return b""

    async def attach(self, session_id: str, offset: int, *, lease: bool = True) -> Stream:
        """The session's stream from `offset` (-1: from what svc last acknowledged). `lease`: svc
        reads a terminal's PTY itself whenever the holder lets it (holder/lease.py)."""

        async def again(at: int, wants_lease: bool) -> Attached | None:
            try:
                return await self._attach(session_id, at, wants_lease)
            except (HolderError, OSError) as exc:
                logger.warning("could not attach to %s again: %s", session_id, exc)
                return None

        return Stream(await self._attach(session_id, offset, lease), again)

    async def _attach(self, session_id: str, offset: int, lease: bool) -> Attached:
        loop = asyncio.get_running_loop()
        reached = await reach(self.dir, legacy=True)
        sock = reached.sock
        try:
            request = {
                "op": "attach",
                "id": session_id,
                "offset": offset,
                "lease": lease,
                "key": reached.key,
            }
            await loop.sock_sendall(sock, p.json_frame(p.JSON, request))
            # The first read may carry the PTY (SCM_RIGHTS), which asyncio's transports drop.
            data, fds = await _recv_fds(sock)
        except BaseException:
            sock.close()
            raise
        frames = Frames()
        transport, _ = await loop.create_unix_connection(lambda: frames, sock=sock)
        try:
            return Attached(transport, frames, await _hello(frames, data, session_id), fds)
        except BaseException:  # refused, or cancelled: neither the connection nor a lease stays
            transport.close()
            for fd in fds:
                os.close(fd)
            raise

    async def forget(self, session_id: str) -> None:
        with contextlib.suppress(HolderError):
            await self.request("forget", id=session_id)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reading


async def _hello(frames: Frames, data: bytes, session_id: str) -> dict[str, Any]:
    """The holder's answer to an attach, its first frame (`data` is what came with the PTY)."""
    frames.data_received(data)
    if not data:
        frames.connection_lost(None)
    first = await frames.next()
    # A holder of an older svc may send an exit notice first: skipped, it is not the answer.
    while first is not None and first[0] == p.JSON and "event" in json.loads(first[1]):
        first = await frames.next()
    hello = json.loads(first[1]) if first is not None and first[0] == p.JSON else {}
    if not hello.get("ok"):
        why = hello.get("error") or (
            "the holder closed the connection"
            if first is None
            else "the holder's answer was not a hello"
        )
        raise HolderError(f"could not attach to {session_id}: {why}")
    return hello


async def _recv_fds(sock: socket.socket) -> tuple[bytes, list[int]]:
    loop = asyncio.get_running_loop()
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 4)
            return data, list(fds)
        except BlockingIOError:
            readable = loop.create_future()
            loop.add_reader(sock.fileno(), readable.set_result, None)
            try:
                await readable
            finally:
                loop.remove_reader(sock.fileno())
