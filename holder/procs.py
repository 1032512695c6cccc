"""Process sessions: every hosted child leads its own session, so the session id finds all of its
descendants, including background jobs that job control moved into other process groups. And an
agent started on pipes."""

from __future__ import annotations

import contextlib
import os
import subprocess


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


def leading_soon(pid: int) -> bool:
    """Whether `pid` runs but does not lead its own session yet: a child just started, between
    its exec and its `setsid` (the `env` and `setsid` programs run first)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != b"Z" and int(fields[3]) != pid


def signal_session(sid: int, sig: int) -> int:
    members = session_members(sid)
    for pid in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return len(members)


def spawn_pipes(
    argv: list[str], env: dict[str, str], cwd: str, stderr_path: str
) -> tuple[subprocess.Popen[bytes], int, int]:
    """An agent on pipes: the process, the read end of its stdout, the write end of its stdin."""
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    try:
        with open(stderr_path, "ab") as stderr:
            proc = subprocess.Popen(
                argv,
                stdin=stdin_r,
                stdout=stdout_w,
                stderr=stderr,
                cwd=cwd,
                env=env,
                close_fds=True,
                start_new_session=True,  # its own session: a stop reaches every descendant
            )
    except OSError:
        os.close(stdin_w)
        os.close(stdout_r)
        raise
    finally:
        os.close(stdin_r)
        os.close(stdout_w)
    return proc, stdout_r, stdin_w
