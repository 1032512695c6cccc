"""A reboot, as far as svc can tell: svc and everything it started die at once, by SIGKILL, with
no chance to record anything (contract §17 "Resume").

What dies: the daemon; every process whose environment names its `$SVC_HOME` (a cold-started
daemon, and the process holders, which svc starts with its own environment); every process of
the given sessions (their `SVC_SESSION_ID`: the agents and whatever they started, which left
`SVC_HOME` behind); and every member of the process sessions those lead (an agent's helper
that cleared its environment). The disk stays: svc's database, the agents' own session files.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

from harness.daemon import Daemon


def _environ(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []


def _stat(pid: int) -> list[bytes]:
    """Fields 3… of /proc/<pid>/stat (state first); comm may hold spaces and parentheses."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return bool(stat) and stat[0] != b"Z"


def processes_of(home: Path, session_ids: Iterable[str] = ()) -> list[int]:
    """Live processes whose environment has SVC_HOME=`home` or one of the SVC_SESSION_IDs, and
    every member of the process sessions they are in (never this test's own)."""
    markers = {f"SVC_HOME={home}".encode()}
    markers |= {f"SVC_SESSION_ID={sid}".encode() for sid in session_ids}
    pids = _pids()
    found = {pid for pid in pids if markers.intersection(_environ(pid))}
    sessions = {int(_stat(pid)[3]) for pid in found if _stat(pid)} - {os.getsid(0)}
    found |= {pid for pid in pids if (stat := _stat(pid)) and int(stat[3]) in sessions}
    return sorted(pid for pid in found if alive(pid))


def simulate_reboot(daemon: Daemon, session_ids: Iterable[str] = (), timeout: float = 10) -> int:
    """SIGKILL the daemon and everything of its (above) and wait until all are gone; returns how
    many processes were killed. The daemon can then be started again on the same home."""
    session_ids = list(session_ids)
    killed: set[int] = set()
    proc = daemon.proc
    if proc is not None and proc.poll() is None:
        # Its own process session too (a warm-started daemon's environ is the fork server's).
        members = [p for p in _pids() if (stat := _stat(p)) and int(stat[3]) == proc.pid]
        for pid in {proc.pid, *members}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
    deadline = time.monotonic() + timeout
    while left := processes_of(daemon.home, session_ids):
        if time.monotonic() > deadline:
            raise AssertionError(f"still alive after SIGKILL: {left}")
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        time.sleep(0.05)
    if proc is not None:
        proc.wait(timeout)
        daemon.proc = None
    # After a reboot no process is left, not even a zombie: the orphans' new parent (init here)
    # reaps them in its own time, and until then `kill(pid, 0)` says they exist.
    while reaped := [pid for pid in killed if Path(f"/proc/{pid}").exists()]:
        if time.monotonic() > deadline + 20:
            raise AssertionError(f"never reaped after SIGKILL: {reaped}")
        time.sleep(0.1)
    return len(killed)
