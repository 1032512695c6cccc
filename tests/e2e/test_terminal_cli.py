"""The command-line client against a live daemon: `status`, `sessions`, `attach` in a real PTY."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.daemon import PYTHON, ROOT, Daemon
from harness.mcp import tool
from harness.termclient import create_session, start_hosting_daemon, stop_session


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-cli"))
    yield server
    server.stop()


def test_status_and_sessions_report_the_live_daemon(host: Daemon, tmp_path: Path) -> None:
    session = create_session(host, tmp_path)
    status = json.loads(host.manage("status", "--json").stdout)
    assert status["running"] and status["url"] == host.url
    assert status["live_sessions"] >= 1 and "shell" in status["agents_enabled"]
    listed = json.loads(host.manage("sessions", "--json", "--live").stdout)
    assert session["id"] in {s["id"] for s in listed}
    table = host.manage("sessions").stdout
    assert session["id"][:8] in table and "running" in table  # the list shows short ids
    stop_session(host, session["id"])


def test_status_says_when_the_daemon_is_down(tmp_path: Path) -> None:
    from harness.daemon import free_port, manage, migrated_home

    home = migrated_home(tmp_path / "home")
    result = manage(home, "status", env={"SVC_PORT": str(free_port())}, check=False)
    assert result.returncode != 0
    assert "svc is not running at" in result.stderr


def read_until(fd: int, needle: bytes, timeout: float = 10) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        assert time.monotonic() < deadline, f"{needle!r} not seen in {seen[-300:]!r}"
        if select.select([fd], [], [], 0.1)[0]:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen


class CliInPty:
    """`manage.py <args>` on a real pseudo-terminal of a given size, as a person runs it."""

    def __init__(self, host: Daemon, *args: str, rows: int = 30, cols: int = 100) -> None:
        self.master, slave = os.openpty()
        self.resize(rows, cols)
        # Stale COLUMNS/LINES (a parent shell or pytest-xdist sets them): the pty's size must win.
        env = {**os.environ, "SVC_HOME": str(host.home), "COLUMNS": "80", "LINES": "24"}
        self.proc = subprocess.Popen(
            [PYTHON, str(ROOT / "manage.py"), *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        deadline = time.monotonic() + 20
        while termios.tcgetattr(self.master)[3] & termios.ICANON:  # typed before raw = echoed
            assert time.monotonic() < deadline, f"{args[0]} never put the terminal in raw mode"
            time.sleep(0.02)

    def resize(self, rows: int, cols: int, *, tell: bool = True) -> None:
        """What a terminal emulator does: set the size, and the kernel tells the foreground
        process group (SIGWINCH) — here the CLI, which has its own session. `tell=False`: a
        signal the CLI has not handled yet when the next keys come."""
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        if tell and getattr(self, "proc", None) is not None:
            self.proc.send_signal(signal.SIGWINCH)

    def type(self, keys: bytes, expect: bytes) -> bytes:
        os.write(self.master, keys)
        return read_until(self.master, expect)

    def close(self) -> None:
        self.proc.kill()
        os.close(self.master)


def session_status(host: Daemon, session_id: str) -> dict:
    return httpx.get(f"{host.url}/api/sessions/{session_id}", headers=host.owner_headers()).json()


@pytest.mark.parametrize("command", ["attach", "pickup"])
def test_the_cli_is_a_real_terminal_typing_resize_detach_and_exit_codes(
    host: Daemon, tmp_path: Path, command: str
) -> None:
    session = create_session(host, tmp_path)
    if command == "pickup":
        code = asyncio.run(tool(host, "prepare_handover", session_id=session["id"]))["code"]
        cli = CliInPty(host, "pickup", code)
    else:
        cli = CliInPty(host, "attach", session["id"])
    try:
        cli.type(b"echo cli-$((2*21))\r", b"cli-42")  # typing works
        cli.type(b"stty size\r", b"30 100")  # the size it started with
        cli.resize(40, 120)  # and type at once: the keys must not overtake the new size
        cli.type(b"stty size\r", b"40 120")
        cli.resize(50, 130, tell=False)
        cli.type(b"stty size\r", b"50 130")
        cli.type(b"\x1d", b"detached")
        assert cli.proc.wait(10) == 0
    finally:
        cli.close()
    assert session_status(host, session["id"])["status"] == "running"  # it kept running
    again = CliInPty(host, "attach", session["id"][:8])  # the short id the lists print
    try:
        again.type(b"exit 7\r", b"exited with code 7")
        assert again.proc.wait(10) == 7  # the session's exit code is the command's
    finally:
        again.close()
    deadline = time.monotonic() + 10
    while (ended := session_status(host, session["id"]))["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert ended["exit_code"] == 7
