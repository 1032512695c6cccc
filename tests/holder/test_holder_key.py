"""Issue 41, finding 5: the holder serves svc alone, not every process of the user's that can
reach its socket. A process without the holder's key, or one in another network namespace (cut
off from the network, as a sandbox would be) even with the key, cannot make it spawn anything.
The attacker is a program of its own (tests/holder/raw.py), outside svc's code."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from holder import protocol as p
from holder.client import HolderClient

from .test_holder import read_until

pytestmark = pytest.mark.django_db(databases=[])  # no database: the holder is not Django's

RAW = Path(__file__).with_name("raw.py")


def attack(directory: Path, marker: Path, *wrapper: str, key: bool = False) -> list[list]:
    """raw.py run as a process of its own: each way in, with what the holder answered."""
    argv = [*wrapper, sys.executable, str(RAW), str(directory), str(marker)]
    result = subprocess.run(
        [*argv, *(["--key"] if key else [])], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


async def test_a_process_of_this_user_without_the_key_cannot_make_the_holder_spawn(
    holder: HolderClient, tmp_path: Path
) -> None:
    marker = tmp_path / "spawned"
    answers = await asyncio.to_thread(attack, tmp_path / "holder", marker)
    await asyncio.sleep(0.5)  # time for a spawned `sh` to have written it
    assert not marker.exists(), f"the holder ran a command for a process without its key: {answers}"
    for first, *rest in answers:
        assert first["ok"] is False and "key" in first["error"], answers
        assert rest == [None] * len(rest), answers  # closed before anything else was read
    assert await holder.sessions() == []  # and it still serves svc


@pytest.mark.skipif(os.geteuid() != 0, reason="`unshare -n` needs root (CI runs as root)")
async def test_a_process_in_another_network_namespace_cannot_use_the_holder_even_with_its_key(
    holder: HolderClient, tmp_path: Path
) -> None:
    assert shutil.which("unshare"), "util-linux's unshare is needed"
    marker = tmp_path / "spawned"
    answers = await asyncio.to_thread(
        attack, tmp_path / "holder", marker, "unshare", "-n", key=True
    )
    await asyncio.sleep(0.5)
    assert not marker.exists(), (
        f"a process without network had the holder run a command in the host's network "
        f"namespace ({marker.read_text().strip()}): {answers}"
    )
    assert all(a is None for pair in answers for a in pair), answers  # closed unanswered
    # The same program in the holder's own namespace, with the key, is the owner's: it spawns
    # (what shows the key it read was right, and the namespace is what refused it above).
    answers = await asyncio.to_thread(attack, tmp_path / "holder", marker, key=True)
    assert answers[-1][-1]["ok"] is True, answers
    async with asyncio.timeout(10):
        while not marker.exists() or not marker.read_text():
            await asyncio.sleep(0.05)
    assert marker.read_text().strip() == os.readlink("/proc/self/ns/net")


async def test_the_key_is_in_no_hosted_processs_environment(
    holder: HolderClient, tmp_path: Path
) -> None:
    key = (tmp_path / "holder" / "holder.key").read_text()
    assert len(key) == 64
    await holder.spawn(
        "env",
        kind="pipe",
        argv=("sh", "-c", "env; echo; echo END"),
        env={"PATH": os.environ["PATH"]},
        cwd=str(tmp_path),
    )
    out = b""
    stream = await holder.attach("env", 0)
    out = await read_until(stream, b"END\n")
    assert key.encode() not in out
    holder_pid = int((tmp_path / "holder" / "holder.pid").read_text())
    for name in ("environ", "cmdline"):
        assert key.encode() not in Path(f"/proc/{holder_pid}/{name}").read_bytes()
    stream.close()


async def test_every_connection_of_svcs_carries_the_key_in_its_first_frame(
    holder: HolderClient, tmp_path: Path
) -> None:
    """svc's own connections (control and attach) pass; the hello answers version 2."""
    assert (await holder.request("hello", key=(tmp_path / "holder" / "holder.key").read_text()))[
        "version"
    ] == p.VERSION
    await holder.spawn(
        "t",
        kind="pty",
        argv=("sh", "-c", "echo ready; sleep 30"),
        env={"PATH": os.environ["PATH"]},
        cwd=str(tmp_path),
    )
    stream = await holder.attach("t", 0)
    await read_until(stream, b"ready")
    stream.close()
