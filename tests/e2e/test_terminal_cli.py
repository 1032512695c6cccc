"""The command-line client against a live daemon: `status`, `sessions`, `attach` in a real PTY."""

from __future__ import annotations

import json
import os
import select
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sessions_app.termclient import create_session, start_hosting_daemon, stop_session
from tests.support.daemon import PYTHON, ROOT, Daemon


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
    assert session["id"] in table and "running" in table
    stop_session(host, session["id"])


def test_status_says_when_the_daemon_is_down(tmp_path: Path) -> None:
    from tests.support.daemon import free_port, manage, migrated_home

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


def test_attach_is_a_raw_terminal_that_detaches_with_ctrl_bracket(
    host: Daemon, tmp_path: Path
) -> None:
    session = create_session(host, tmp_path)
    master, slave = os.openpty()
    env = {**os.environ, "SVC_HOME": str(host.home), "SVC_PORT": str(host.port)}
    proc = subprocess.Popen(
        [PYTHON, str(ROOT / "manage.py"), "attach", session["id"]],
        stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    try:
        deadline = time.monotonic() + 20
        while termios.tcgetattr(master)[3] & termios.ICANON:  # typed before raw mode = echoed
            assert time.monotonic() < deadline, "attach never put the terminal in raw mode"
            time.sleep(0.02)
        os.write(master, b"echo cli-$((2*21))\r")
        read_until(master, b"cli-42")
        os.write(master, b"\x1d")
        read_until(master, b"detached")
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        os.close(master)
    stop_session(host, session["id"])
