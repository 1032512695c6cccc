"""A restart keeps every row; a live session no holder kept (its process is gone, or was never
one of svc's) ends `interrupted` (contract §17) — whatever its pid says."""

from __future__ import annotations

import subprocess
import sys

import httpx

from harness.daemon import Daemon

CREATE_ROWS = """
from sessions_app.models import Session
Session.objects.create(agent="shell", workspace="/tmp", status="running", pid={dead})
Session.objects.create(agent="shell", workspace="/tmp", status="running", pid={alive})
Session.objects.create(agent="shell", workspace="/tmp", status="exited", exit_code=3)
"""


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_restart_keeps_rows_and_interrupts_sessions_no_holder_kept(fresh_daemon: Daemon, tmp_path):
    fresh_daemon.start()
    headers = fresh_daemon.owner_headers()
    created = httpx.post(
        f"{fresh_daemon.url}/api/workspaces", json={"path": str(tmp_path)}, headers=headers
    )
    assert created.status_code == 201
    fresh_daemon.stop()

    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        fresh_daemon.manage("shell", "-c", CREATE_ROWS.format(dead=dead_pid(), alive=sleeper.pid))
        fresh_daemon.start()
        sessions = httpx.get(f"{fresh_daemon.url}/api/sessions", headers=headers).json()
        workspaces = httpx.get(f"{fresh_daemon.url}/api/workspaces", headers=headers).json()
    finally:
        sleeper.kill()
        sleeper.wait()

    assert len(sessions) == 3
    # A live pid proves nothing (pids are reused): only a holder's word keeps a session live.
    interrupted = [s for s in sessions if s["pid"] is not None]
    assert [(s["status"], s["end_reason"]) for s in interrupted] == [("exited", "interrupted")] * 2
    assert all(s["ended_at"] for s in interrupted)
    assert [s["exit_code"] for s in sessions if s["pid"] is None] == [3]
    assert [w["path"] for w in workspaces] == [str(tmp_path.resolve())]
