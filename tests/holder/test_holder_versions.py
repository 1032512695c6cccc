"""Sessions outlive svc restarts, so svc meets holders of other versions (holder/protocol.py):
an upgraded svc keeps using the holder an older svc left running (its sessions taken back, new
ones started in it), and an older svc is refused cleanly by a newer holder, with an error that
names the key. The older svc is the real one: the holder package of cec4f1f, the commit issue 41
was found on (tests/fixtures/holder/holder-cec4f1f.tar.gz, made by
`git archive cec4f1f holder | gzip -9n`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from holder import paths
from holder.client import HolderClient

from .test_holder import _alive, read_until

pytestmark = pytest.mark.django_db(databases=[])  # no database: the holder is not Django's

OLD = Path(__file__).resolve().parents[1] / "fixtures" / "holder" / "holder-cec4f1f.tar.gz"

OLD_SVC_SPAWNS = """
import asyncio, os, sys
from pathlib import Path
from holder.client import HolderClient

async def main():
    client = HolderClient(Path(sys.argv[1]), lambda sid, code: None)
    argv = ("bash", "-c", "while read l; do echo old-$l; done")
    env = {"PATH": os.environ["PATH"]}
    print(await client.spawn("old", kind="pty", argv=argv, env=env, cwd="/"))
    await client.close()

asyncio.run(main())
"""

OLD_SVC_CONNECTS = """
import asyncio, sys
from pathlib import Path
from holder.client import HolderClient, HolderError

async def main():
    client = HolderClient(Path(sys.argv[1]), lambda sid, code: None)
    try:
        await client.connect(start=False)
        print("connected")
    except HolderError as exc:
        print(f"HolderError: {exc}")
    try:
        await client.attach("new", 0)
        print("attached")
    except HolderError as exc:
        print(f"HolderError: {exc}")

asyncio.run(main())
"""


@pytest.fixture
def old_svc(tmp_path: Path) -> Path:
    """The older svc's code: its `holder` package, importable from the returned folder."""
    code = tmp_path / "old-svc"
    code.mkdir()
    with tarfile.open(OLD) as archive:
        archive.extractall(code, filter="data")
    return code


def run_old(code: Path, script: str, directory: Path) -> str:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(code)}
    result = subprocess.run(
        [sys.executable, "-c", script, str(directory)],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@contextlib.contextmanager
def ended(directory: Path) -> Iterator[None]:
    """Whatever holder runs for `directory` is SIGTERMed at the end, and an older holder's
    folder in the temporary folder removed."""
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            pid = int((directory / "holder.pid").read_text())
            os.kill(pid, signal.SIGTERM)
        if (legacy := paths.legacy_socket_dir(directory)) is not None:
            shutil.rmtree(legacy, ignore_errors=True)


@pytest.mark.parametrize("depth", ["short", "deep"])
async def test_an_upgraded_svc_keeps_using_the_holder_an_older_svc_left_running(
    old_svc: Path, tmp_path: Path, depth: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Deep: the older holder listens in the temporary folder, where svc looks for it, checked."""
    home = tmp_path / ("h" * 120 if depth == "deep" else "h")
    directory = home / "holder"
    with ended(directory):
        old_pid = int(await asyncio.to_thread(run_old, old_svc, OLD_SVC_SPAWNS, directory))
        assert (paths.legacy_socket_dir(directory) is not None) == (depth == "deep")
        holder_pid = int((directory / "holder.pid").read_text())
        client = HolderClient(directory, lambda sid, code: None)
        with caplog.at_level(logging.WARNING):
            assert await client.connect(start=False) is True
        assert client.holder_pid == holder_pid
        assert "started by an older svc" in caplog.text
        assert [s["pid"] for s in await client.sessions()] == [old_pid]  # taken back
        stream = await client.attach("old", 0)
        stream.write(b"one\r")
        await read_until(stream, b"old-one\r\n")
        argv = ("bash", "-c", "while read l; do echo new-$l; done")
        await client.spawn("new", kind="pty", argv=argv, env=dict(os.environ), cwd="/")
        fresh = await client.attach("new", 0)
        fresh.write(b"two\r")
        await read_until(fresh, b"new-two\r\n")
        stream.close()
        fresh.close()
        await client.close()


async def test_a_newer_holder_refuses_an_older_svc_cleanly(
    holder: HolderClient, old_svc: Path, tmp_path: Path
) -> None:
    argv = ("bash", "-c", "while read l; do echo new-$l; done")
    await holder.spawn("new", kind="pty", argv=argv, env=dict(os.environ), cwd="/")
    out = await asyncio.to_thread(run_old, old_svc, OLD_SVC_CONNECTS, tmp_path / "holder")
    lines = out.splitlines()
    assert len(lines) == 2 and all(line.startswith("HolderError: ") for line in lines), out
    assert all("key" in line for line in lines), out
    # The holder and what it holds go on, for the svc that has the key.
    assert _alive(holder.holder_pid)
    stream = await holder.attach("new", 0)
    stream.write(b"still\r")
    await read_until(stream, b"new-still\r\n")
    stream.close()
