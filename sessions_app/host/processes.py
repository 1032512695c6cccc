"""Process-tree helpers: every hosted child leads its own session, so the session id finds all of
its descendants, including background jobs that job control moved into other process groups."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import subprocess


@functools.cache
def _env_resets_signals() -> bool:
    try:
        probe = subprocess.run(["env", "--default-signal", "true"], capture_output=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def with_default_signals(argv: tuple[str, ...]) -> tuple[str, ...]:
    """argv that starts with every signal at its default action. Ignored signals are inherited:
    an svc started under `nohup` or as a background job ignores SIGHUP, SIGINT and SIGQUIT, and
    so would every job in its terminals — Ctrl-C would do nothing. GNU env resets them at exec
    (no Python runs between fork and exec); where it cannot, argv is used as it is."""
    return ("env", "--default-signal", *argv) if _env_resets_signals() else argv


def exit_code_of(returncode: int) -> int:
    """Shell convention: killed by signal N → 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def session_members(sid: int) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # Field 2 (comm) may hold spaces and parentheses, so split after the last ')'.
        fields = stat.rsplit(b")", 1)[1].split()
        if fields[0] != b"Z" and int(fields[3]) == sid:
            pids.append(int(entry.name))
    return pids


def signal_session(sid: int, sig: int) -> int:
    members = session_members(sid)
    for pid in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return len(members)


async def kill_session(sid: int, grace: float = 1.0) -> None:
    """Hang up the whole session like a closed terminal, then SIGKILL what ignored it."""
    if not signal_session(sid, signal.SIGHUP):
        return
    signal_session(sid, signal.SIGCONT)  # a stopped job only sees SIGHUP once continued
    for _ in range(max(1, int(grace / 0.02))):  # /proc polling: there is no event for "all gone"
        if not session_members(sid):
            return
        await asyncio.sleep(0.02)
    signal_session(sid, signal.SIGKILL)
