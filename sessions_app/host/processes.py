"""Process-tree helpers: starting a hosted child with default signals, and ending its whole session
(the session-scanning helpers are the holder's, which ends trees too)."""

from __future__ import annotations

import asyncio
import functools
import signal
import subprocess

from holder.procs import exit_code_of, leading_soon, session_members, signal_session

__all__ = ["exit_code_of", "kill_session", "session_members", "signal_session"]


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


LEAD_WAIT_S = 5.0  # a child just started takes its session in milliseconds, on a busy machine more


async def kill_session(sid: int, grace: float = 1.0) -> None:
    """Hang up the whole session like a closed terminal, then SIGKILL what ignored it."""
    # A stop that comes right after the start (DELETE at once) may find the child before its
    # setsid: no session to hang up yet, and the shell would run on unstopped.
    hung_up = signal_session(sid, signal.SIGHUP) or (
        await _session_taken(sid) and signal_session(sid, signal.SIGHUP)
    )
    if not hung_up:
        return
    signal_session(sid, signal.SIGCONT)  # a stopped job only sees SIGHUP once continued
    for _ in range(max(1, int(grace / 0.02))):  # /proc polling: there is no event for "all gone"
        if not session_members(sid):
            return
        await asyncio.sleep(0.02)
    signal_session(sid, signal.SIGKILL)


async def _session_taken(sid: int) -> bool:
    """Wait while `sid` starts up, until it leads its session (True) or is gone (False)."""
    for _ in range(int(LEAD_WAIT_S / 0.005)):
        if session_members(sid):
            return True
        if not leading_soon(sid):
            # Or it took its session between the two looks (seen under load: the stop then
            # signalled nobody and the session ran on): one more look tells.
            return bool(session_members(sid))
        await asyncio.sleep(0.005)
    return False
