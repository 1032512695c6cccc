"""The holder on its own: a real holder process, real PTYs and pipes, svc's client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import sys
from pathlib import Path

import pytest

from holder import paths
from holder import protocol as p
from holder.client import HolderClient, Stream

pytestmark = pytest.mark.django_db(databases=[])  # no database: the holder is not Django's


async def read_until(stream: Stream, marker: bytes, timeout: float = 10) -> bytes:
    out = bytearray()
    async with asyncio.timeout(timeout):
        while marker not in out:
            frame = await stream.read()
            assert frame is not None, bytes(out)
            if frame[0] == p.OUTPUT:
                out += frame[1]
    return bytes(out)


def shell(script: str) -> dict:
    return {"argv": ("setsid", "-c", "bash", "-c", script), "env": {"PATH": os.environ["PATH"]}}


async def test_a_terminal_keeps_running_and_its_output_while_nobody_is_attached(
    holder: HolderClient, tmp_path: Path
) -> None:
    script = "for i in $(seq 1 400); do echo line-$i; sleep 0.005; done; read x; echo got-$x"
    pid = await holder.spawn("t1", kind="pty", cwd=str(tmp_path), **shell(script))
    first = await holder.attach("t1", 0)
    seen = await read_until(first, b"line-20\r\n")
    first.close()  # svc goes away mid-output
    await asyncio.sleep(0.5)
    again = await holder.attach("t1", 0)  # a new svc: the whole scrollback, then live
    assert again.pid == pid and again.offset == 0 and again.generation == 2
    out = await read_until(again, b"line-400\r\n")
    lines = [x for x in out.decode().split("\r\n") if x.startswith("line-")]
    assert lines == [f"line-{i}" for i in range(1, 401)]  # every line once, in order
    assert out.startswith(seen)
    again.write(b"hello\r")
    assert b"got-hello" in await read_until(again, b"got-hello")
    frame = None
    async with asyncio.timeout(10):
        while frame is None or frame[0] != p.EXIT:
            frame = await again.read()
    assert json.loads(frame[1]) == {"exit_code": 0}
    listed = {s["id"]: s for s in await holder.sessions()}
    assert listed["t1"]["finished"] is True and listed["t1"]["exit_code"] == 0
    assert ("t1", 0) in holder.exits  # type: ignore[attr-defined]
    await holder.forget("t1")
    assert await holder.sessions() == []
    assert not (tmp_path / "holder" / "sessions" / "t1").exists()


async def test_an_agent_pipe_is_journaled_until_svc_acknowledges_it(
    holder: HolderClient, tmp_path: Path
) -> None:
    # An "agent" answering each input line with two lines.
    script = 'while read l; do echo "a:$l"; echo "b:$l"; done'
    await holder.spawn(
        "c1",
        kind="pipe",
        argv=("bash", "-c", script),
        env={"PATH": os.environ["PATH"]},
        cwd=str(tmp_path),
        stderr=str(tmp_path / "agent.log"),
    )
    stream = await holder.attach("c1", -1)
    stream.write(b"one\n")
    out = await read_until(stream, b"b:one\n")
    assert out == b"a:one\nb:one\n"
    stream.ack(len(b"a:one\n"))  # svc stored the first line only
    stream.write(b"two\n")  # answered while svc is away
    await read_until(stream, b"b:two\n")
    stream.close()
    await asyncio.sleep(0.3)
    again = await holder.attach("c1", -1)
    assert again.offset == len(b"a:one\n")  # from what svc acknowledged
    replay = await read_until(again, b"b:two\n")
    assert replay == b"b:one\na:two\nb:two\n"
    again.ack(again.offset + len(replay))
    await asyncio.sleep(0.2)
    journal = tmp_path / "holder" / "sessions" / "c1" / "out"
    assert journal.stat().st_size == 0  # everything acknowledged: the journal is emptied
    again.write(b"three\n")
    assert await read_until(again, b"b:three\n") == b"a:three\nb:three\n"


async def test_holders_are_this_users_only(holder: HolderClient, tmp_path: Path) -> None:
    directory = tmp_path / "holder"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / paths.SOCKET).stat().st_mode) == 0o600
    assert stat.S_IMODE((directory / paths.KEY).stat().st_mode) == 0o600
    await holder.spawn("s", kind="pty", cwd=str(tmp_path), **shell("echo hi; sleep 5"))
    assert stat.S_IMODE((directory / "sessions" / "s" / "out").stat().st_mode) == 0o600
    if os.getuid() != 0:
        pytest.skip("needs root to try as another user")  # CI runs as root
    # Another user cannot reach the socket: the folder keeps them out.
    code = (
        "import os, socket, sys; os.setgid(65534); os.setuid(65534); s = socket.socket(1);"
        f"s.connect({str(directory / paths.SOCKET)!r})"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    assert proc.returncode != 0 and b"PermissionError" in err


async def test_sigterm_to_the_holder_ends_every_session(
    holder: HolderClient, tmp_path: Path
) -> None:
    pids = [
        await holder.spawn(f"s{i}", kind="pty", cwd=str(tmp_path), **shell("trap '' HUP; sleep 60"))
        for i in range(3)
    ]
    holder_pid = int((tmp_path / "holder" / "holder.pid").read_text())
    os.kill(holder_pid, signal.SIGTERM)
    async with asyncio.timeout(10):
        while any(_alive(pid) for pid in [*pids, holder_pid]):
            await asyncio.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or before the read
        return False
