"""What the holder checks before it acts on anything a connection sends (issue 41): who is on
the other end, and that every frame is what its kind says.

A connection is taken only from this user's processes in the holder's own network namespace (a
process cut off from the network, `unshare -n` or a sandbox's namespace, must not have the
holder run commands on the host's network for it). Every request and stream frame is parsed
here into checked values before the holder touches a process; a bad one raises BadFrame, which
answers an error or ends that one connection, never the holder and the sessions it holds.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

from holder import paths

logger = logging.getLogger("holder")

SIZE_MAX = 0xFFFF  # a terminal's columns and rows (struct winsize holds unsigned shorts)
OFFSET_MAX = (1 << 63) - 1
ID_MAX = 200
QUIET_S = 60.0


class BadFrame(ValueError):
    pass


def peer_problem(sock: socket.socket) -> str:
    """Why the process on the other end of `sock` may not use the holder ("" when it may)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    if uid != os.getuid():  # the folder's mode already keeps others out; this says so twice
        return f"uid {uid} is not this user"
    try:
        theirs = os.readlink(f"/proc/{pid}/ns/net")
    except OSError as exc:
        return f"the network namespace of pid {pid} cannot be read ({exc.strerror})"
    if theirs != os.readlink("/proc/self/ns/net"):
        return f"pid {pid} runs in another network namespace ({theirs})"
    return ""


def json_of(payload: bytes) -> dict[str, Any]:
    """A JSON object frame's payload, parsed (any JSON, however deep or odd, is a BadFrame)."""
    try:
        message = json.loads(payload)
    except (ValueError, RecursionError) as exc:
        raise BadFrame(f"not JSON: {type(exc).__name__}") from None
    if not isinstance(message, dict):
        raise BadFrame(f"a JSON {type(message).__name__}, not an object")
    return message


def integer(
    message: dict[str, Any], name: str, low: int, high: int, default: int | None = None
) -> int:
    value = message.get(name, default)
    if type(value) is not int or not low <= value <= high:  # bool is no int here
        raise BadFrame(f"{name} must be a whole number from {low} to {high}")
    return value


def text(message: dict[str, Any], name: str, default: str | None = None) -> str:
    value = message.get(name, default)
    if not isinstance(value, str) or "\0" in value:
        raise BadFrame(f"{name} must be a string without NUL")
    return value


def session_id(message: dict[str, Any]) -> str:
    sid = text(message, "id")
    if len(sid) > ID_MAX:
        raise BadFrame(f"id is longer than {ID_MAX} characters")
    if not paths.is_session_id(sid):
        raise BadFrame(f"not a session id: {sid!r}")
    return sid


def size_of(payload: bytes) -> tuple[int, int]:
    """A RESIZE frame's (cols, rows)."""
    size = json_of(payload)
    return integer(size, "cols", 0, SIZE_MAX), integer(size, "rows", 0, SIZE_MAX)


def ack_of(payload: bytes) -> int:
    """An ACK frame's offset."""
    return integer(json_of(payload), "offset", 0, OFFSET_MAX)


@dataclass(frozen=True)
class Spawn:
    """A checked `spawn` request: nothing in it fails once the process has started."""

    id: str
    kind: str
    argv: list[str]
    env: dict[str, str]
    cwd: str
    cols: int
    rows: int
    stderr: str
    offset: int
    preface: bytes


def spawn_of(request: dict[str, Any]) -> Spawn:
    kind = request.get("kind")
    if kind not in ("pty", "pipe"):
        raise BadFrame("kind must be pty or pipe")
    argv, env = request.get("argv"), request.get("env")
    if not isinstance(argv, list) or not argv or not all(_plain(a) for a in argv):
        raise BadFrame("argv must be a list of strings without NUL, not empty")
    if not isinstance(env, dict) or not all(_plain(v) and _name(k) for k, v in env.items()):
        raise BadFrame("env must be an object of strings without NUL, named without '='")
    try:
        preface = base64.b64decode(text(request, "preface", ""), validate=True)
    except binascii.Error:
        raise BadFrame("preface must be base64") from None
    return Spawn(
        id=session_id(request),
        kind=kind,
        argv=argv,
        env=env,
        cwd=text(request, "cwd"),
        cols=integer(request, "cols", 0, SIZE_MAX, 80),
        rows=integer(request, "rows", 0, SIZE_MAX, 24),
        stderr=text(request, "stderr", ""),
        offset=integer(request, "offset", 0, OFFSET_MAX, 0),
        preface=preface,
    )


def _plain(value: object) -> bool:
    return isinstance(value, str) and "\0" not in value


def _name(value: str) -> bool:
    return _plain(value) and bool(value) and "=" not in value


class Complaints:
    """Warnings about bad peers and frames: the first of each reason at once, then at most one a
    minute with how many were left out, so no process can flood the holder's log."""

    def __init__(self) -> None:
        self.last: dict[str, float] = {}
        self.held_back: dict[str, int] = {}

    def say(self, reason: str, detail: str) -> None:
        now = time.monotonic()
        if now - self.last.get(reason, -QUIET_S) < QUIET_S:
            self.held_back[reason] = self.held_back.get(reason, 0) + 1
            return
        self.last[reason] = now
        more = self.held_back.pop(reason, 0)
        suffix = f" ({more} more like it since the last such line)" if more else ""
        logger.warning("%s: %s%s", reason, detail, suffix)
