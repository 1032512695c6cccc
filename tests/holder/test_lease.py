"""The lease (holder/lease.py): svc reads a terminal's PTY itself, and every byte it took is in
the holder's journal once, in order, whenever svc goes away."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import select
from pathlib import Path

import pytest

from holder import protocol as p
from holder.client import HolderClient, Stream
from holder.held import TRIM_AT
from tests.holder.test_holder import read_until, shell

LINES = "for i in $(seq 1 400); do echo line-$i; sleep 0.002; done"


def lines_of(out: bytes) -> list[str]:
    return [x for x in out.decode().split("\r\n") if x.startswith("line-")]


async def read_to_exit(stream: Stream, timeout: float = 15) -> tuple[bytes, int]:
    out = bytearray()
    async with asyncio.timeout(timeout):
        while True:
            frame = await stream.read()
            assert frame is not None, bytes(out[-200:])
            if frame[0] == p.OUTPUT:
                out += frame[1]
            elif frame[0] == p.EXIT:
                return bytes(out), json.loads(frame[1])["exit_code"]


def journal(tmp_path: Path, sid: str) -> bytes:
    return (tmp_path / "holder" / "sessions" / sid / "out").read_bytes()


async def test_under_a_lease_svc_reads_the_pty_and_each_byte_is_journaled_before_it_is_seen(
    holder: HolderClient, tmp_path: Path
) -> None:
    await holder.spawn("t", kind="pty", cwd=str(tmp_path), **shell(LINES + "; exit 3"))
    stream = await holder.attach("t", 0)
    assert stream.lease is not None  # the holder let svc read the PTY
    seen = bytearray()
    while b"line-200\r\n" not in seen:
        frame = await stream.read()
        assert frame is not None and frame[0] == p.OUTPUT
        seen += frame[1]
        assert journal(tmp_path, "t").startswith(seen)  # in the journal before svc had it
    listed = {s["id"]: s for s in await holder.sessions()}
    assert listed["t"]["end"] >= len(seen)  # the holder counts what svc journaled
    # The process ends: the holder takes the PTY back, reads what is left, sends the exit.
    rest, code = await read_to_exit(stream)
    assert code == 3 and stream.lease is None
    assert lines_of(seen + rest) == [f"line-{i}" for i in range(1, 401)]
    assert journal(tmp_path, "t") == seen + rest


async def test_what_svc_took_from_the_pty_but_never_journaled_is_drained_once_it_is_gone(
    holder: HolderClient, tmp_path: Path
) -> None:
    """svc SIGKILLed between its two splices: the bytes are in the pipe the holder holds too."""
    await holder.spawn("t", kind="pty", cwd=str(tmp_path), **shell(LINES + "; read x"))
    stream = await holder.attach("t", 0)
    lease = stream.lease
    assert lease is not None
    seen = await read_until(stream, b"line-50\r\n")
    select.select([lease.pty], [], [], 5)
    taken = os.splice(lease.pty, lease.pipe_w, 1 << 16)  # the first splice, not the second
    assert taken > 0
    stream.transport.abort()  # then svc is gone, its descriptors with it
    lease.close()
    os.close(lease.pty)
    again = await holder.attach("t", 0)  # the next svc: the whole scrollback, then live
    out = await read_until(again, b"line-400\r\n")
    assert out.startswith(seen)
    assert lines_of(out) == [f"line-{i}" for i in range(1, 401)]  # every line once, in order
    again.write(b"\r")
    _, code = await read_to_exit(again)
    assert code == 0


async def test_svc_gives_the_lease_back_when_the_journal_is_due_to_be_cut(
    holder: HolderClient, tmp_path: Path
) -> None:
    size = TRIM_AT // 3 * 3  # base64 makes it 4/3 as long (all "A"s): past the cut
    script = f"head -c {size} /dev/zero | base64 -w 0; echo; echo done"
    await holder.spawn("t", kind="pty", cwd=str(tmp_path), **shell(script))
    stream = await holder.attach("t", 0)
    assert stream.lease is not None
    out, code = await read_to_exit(stream, timeout=60)
    assert code == 0 and out.endswith(b"\r\ndone\r\n")
    assert out.count(b"A") == size * 4 // 3  # every byte once
    assert stream.generation > 1  # attached again: the holder cut the journal meanwhile
    kept = journal(tmp_path, "t")
    assert len(kept) <= TRIM_AT and out.endswith(kept)


async def test_a_job_that_keeps_the_pty_open_ends_the_lease_and_the_session_still_ends(
    holder: HolderClient, tmp_path: Path
) -> None:
    script = "setsid sleep 5 & echo bye; exit 4"  # sleep keeps the PTY open, outside the session
    await holder.spawn("t", kind="pty", cwd=str(tmp_path), **shell("echo hi; sleep 0.3; " + script))
    stream = await holder.attach("t", 0)
    assert stream.lease is not None
    out, code = await read_to_exit(stream)
    assert code == 4 and out.count(b"bye") == 1 and out.count(b"hi") == 1


async def test_a_pty_that_cannot_be_spliced_is_given_back_and_read_in_frames(
    holder: HolderClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*args: object, **kwargs: object) -> int:
        raise OSError(errno.EINVAL, "no splice here")

    monkeypatch.setattr(os, "splice", refused)  # svc's side only: the holder is a process
    await holder.spawn("t", kind="pty", cwd=str(tmp_path), **shell(LINES))
    stream = await holder.attach("t", 0)
    out, code = await read_to_exit(stream)
    assert code == 0 and stream.lease is None
    assert lines_of(out) == [f"line-{i}" for i in range(1, 401)]


async def test_a_read_whose_journaling_failed_reaches_svc_once_in_frames(
    holder: HolderClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of the PTY and into the pipe, but not into the journal: the holder drains the pipe."""
    splice = os.splice
    failed: list[int] = []

    def journal_fails_once(src: int, dst: int, count: int, **kwargs: int) -> int:
        if "offset_dst" in kwargs and not failed:  # the second splice: pipe → journal
            failed.append(src)
            raise OSError(errno.ENOSPC, "no space left")
        return splice(src, dst, count, **kwargs)

    monkeypatch.setattr(os, "splice", journal_fails_once)
    await holder.spawn("t", kind="pty", cwd=str(tmp_path), **shell(LINES))
    stream = await holder.attach("t", 0)
    out, code = await read_to_exit(stream)
    assert failed and code == 0 and stream.lease is None
    assert lines_of(out) == [f"line-{i}" for i in range(1, 401)]
    assert journal(tmp_path, "t") == out


async def test_without_a_lease_the_holder_sends_frames_as_before(
    holder: HolderClient, tmp_path: Path
) -> None:
    """What a holder that does not know leases answers, and what an svc that asks for none gets."""
    await holder.spawn("t", kind="pty", cwd=str(tmp_path), **shell(LINES))
    stream = await holder.attach("t", 0, lease=False)
    assert stream.lease is None and stream.pty is not None
    out, code = await read_to_exit(stream)
    assert code == 0 and lines_of(out) == [f"line-{i}" for i in range(1, 401)]


async def test_an_agents_pipes_are_never_leased(holder: HolderClient, tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"]}
    await holder.spawn("c", kind="pipe", argv=("cat",), env=env, cwd=str(tmp_path))
    stream = await holder.attach("c", -1)
    assert stream.lease is None and stream.pty is None
    stream.write(b"hello\n")
    assert await read_until(stream, b"hello\n") == b"hello\n"
