"""Stopping a session's process tree (sessions_app/host/processes.py) at any moment of its start."""

from __future__ import annotations

import subprocess
import sys

from sessions_app.host import processes


async def test_a_stop_right_after_the_start_waits_for_the_session_and_hangs_it_up() -> None:
    """A DELETE that comes as the child is still starting finds it before its `setsid`: there is
    no session to hang up yet. The stop waits for the session and hangs it up. Before the fix it
    signalled nobody and the shell ran on (the session never became `exited`, seen under load)."""
    child = subprocess.Popen(
        ["sh", "-c", "sleep 0.3; exec setsid sleep 100"], stdin=subprocess.DEVNULL
    )
    try:
        assert processes.session_members(child.pid) == []  # not leading its session yet
        await processes.kill_session(child.pid, grace=1.0)
        assert child.wait(timeout=10) == -1  # SIGHUP: the hang-up, not the SIGKILL after it
    finally:
        child.kill()
        child.wait()


async def test_a_stop_of_a_process_already_gone_returns_at_once() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    await processes.kill_session(child.pid)  # nothing to wait for: no leader, no session
    assert processes.session_members(child.pid) == []
