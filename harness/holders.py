"""Ending a test's holder (contract §17): svc leaves held sessions running when it stops, so a
test that is done with a daemon or an in-process runtime ends them, as `bin/svc sessions
--stop-all` or a reboot would — else every test's shells and agents would outlive the run."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def end_holder(home: Path, timeout: float = 10) -> bool:
    """SIGTERM the holder of `home` (it hangs up what it holds and exits) and wait until it is
    gone; False when none ran."""
    pid_file = home / "holder" / "holder.pid"
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return False
    if not _is_holder(pid, home):
        return False  # gone already, its pid maybe someone else's now
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _is_holder(pid, home):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    return True


def _is_holder(pid: int, home: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    # svc names the holder's folder with symlinks resolved (holder/paths.py).
    return state != b"Z" and os.fsencode(Path(os.path.realpath(home)) / "holder") in cmdline
