"""Issue 41, finding 1, svc's side (holder/reach.py): every connection checks the socket's
folder (this user's, closed to others, not a symlink) and the peer (this user's uid, the pid in
holder.pid) before a byte is sent, and refuses otherwise with an error that says what it found;
a home reached through a symlink names one holder. The other local user's planted listener is
tests/e2e/test_holder_reach.py (a live svc)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.other_user import OTHER_GID, OTHER_UID, require_root
from holder import paths
from holder.client import HolderClient, HolderError

from .test_holder import read_until, shell

pytestmark = pytest.mark.django_db(databases=[])  # no database: the holder is not Django's

FAKE = Path(__file__).with_name("fake_holder.py")


@contextlib.contextmanager
def holder_ended(directory: Path) -> Iterator[None]:
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((directory / "holder.pid").read_text()), signal.SIGTERM)


@pytest.mark.parametrize("flaw", ["open to others", "a symlink", "another user's"])
async def test_svc_refuses_a_holder_folder_that_is_not_this_users_alone(
    tmp_path: Path, flaw: str
) -> None:
    directory = tmp_path / "home" / "holder"
    directory.mkdir(parents=True, mode=0o700)
    if flaw == "open to others":
        directory.chmod(0o755)
        expected = "is open to others"
    elif flaw == "a symlink":  # swapped in after svc resolved the home's path
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        directory.rmdir()
        directory.symlink_to(tmp_path / "elsewhere")
        expected = "is a symlink"
    else:
        require_root()
        os.chown(directory, OTHER_UID, OTHER_GID)
        expected = f"belongs to uid {OTHER_UID}"
    from holder.reach import reach  # (here: the code before issue 41 had no such module)

    with pytest.raises(HolderError, match=expected):
        await reach(directory, legacy=True)
    if flaw != "a symlink":  # (svc's client resolves symlinks in the path it is given)
        client = HolderClient(directory, lambda sid, code: None)
        with pytest.raises(HolderError, match=expected):
            await client.connect(start=True)
    assert not (directory / "holder.pid").exists()  # nothing was started there


async def test_a_listener_of_this_users_that_is_not_the_holder_is_refused(tmp_path: Path) -> None:
    """A process of this user (a sandboxed agent, say) plants a socket in the temporary folder
    where an older holder of this deep home would listen, folder mode and all: its pid is not
    the one in holder.pid under $SVC_HOME, so svc uses it not and starts its own holder."""
    directory = tmp_path / ("d" * 100) / "holder"
    legacy = paths.legacy_socket_dir(directory)
    assert legacy is not None
    fake = subprocess.Popen(
        [sys.executable, str(FAKE)],
        env={"FOLDER": str(legacy), "PATH": os.environ["PATH"]},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert fake.stdout is not None and fake.stdout.readline() == "listening\n"
        with holder_ended(directory):
            client = HolderClient(directory, lambda sid, code: None)
            assert client.running()  # a socket is there...
            assert await client.connect(start=False) is False  # ...but not a holder's
            await client.spawn("s", kind="pty", cwd=str(tmp_path), **shell("echo held; cat"))
            stream = await client.attach("s", 0)
            stream.write(b"secret\r")
            await read_until(stream, b"secret\r\n")
            assert client.holder_pid == int((directory / "holder.pid").read_text())
            stream.close()
            await client.close()
    finally:
        fake.terminate()
        stolen, _ = fake.communicate(timeout=10)
        shutil.rmtree(legacy, ignore_errors=True)
    assert stolen == "", f"the planted listener got: {stolen}"


@pytest.mark.parametrize("link", ["short", "deep"])
async def test_a_deep_home_through_a_symlink_gets_its_holder_at_once(
    tmp_path: Path, link: str, caplog: pytest.LogCaptureFixture
) -> None:
    real = tmp_path / ("r" * 120) / "home"
    real.mkdir(parents=True)
    home = tmp_path / ("l" * 120 if link == "deep" else "l")
    home.symlink_to(real)
    client = HolderClient(home / "holder", lambda sid, code: None)
    with holder_ended(real / "holder"), caplog.at_level(logging.WARNING):
        started = time.monotonic()
        await client.spawn("s", kind="pty", cwd=str(tmp_path), **shell("echo one; cat"))
        assert time.monotonic() - started < 3  # the old code waited 5 s, then ran without one
        stream = await client.attach("s", 0)
        await read_until(stream, b"one")
        cmdline = Path(f"/proc/{client.holder_pid}/cmdline").read_bytes().split(b"\0")
        assert os.fsencode(real / "holder") in cmdline  # one name for it, the canonical one
        stream.close()
        await client.close()
        # A second svc, started through the other path, finds the same holder.
        again = HolderClient(real / "holder", lambda sid, code: None)
        assert await again.connect(start=False) is True
        assert [s["id"] for s in await again.sessions()] == ["s"]
        await again.close()
    assert "no holder" not in caplog.text and "did not start" not in caplog.text
