"""A chat agent's own log: what it writes on stderr (stdout is the protocol), kept per session
in `$SVC_HOME/logs/agent-<session id>.log` for the person and for svc's error messages."""

from __future__ import annotations

from pathlib import Path

from core import config


def path(session_id: object) -> Path:
    return config.svc_home() / "logs" / f"agent-{session_id}.log"


def read(session_id: object, size: int = 64 * 1024) -> str:
    """The last `size` bytes, as written (the dashboard's "The agent's log")."""
    try:
        with path(session_id).open("rb") as log:
            log.seek(0, 2)
            log.seek(max(0, log.tell() - size))
            return log.read().decode("utf-8", "replace")
    except OSError:
        return ""


def tail(session_id: object, size: int = 1500) -> str:
    """The end of the log on one line: why an agent failed, in its words."""
    return " ".join(read(session_id, size).split())
