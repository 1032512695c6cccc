"""The holder's key: the holder serves svc, not every process of the user's that reaches its
socket (issue 41).

Each holder makes a fresh random key when it starts, before it listens, in
`<home>/holder/holder.key` (0600 in the 0700 folder). The first frame of every connection must
carry it (`"key"` in its JSON), compared in constant time, or the connection gets an error answer
and is closed. svc reads it for each connection it opens, after it has checked the socket's
folder and the peer (holder/reach.py), so it is never sent to anyone but the holder. It is never
in a hosted process's environment (neither svc nor the holder puts it there), and a sandbox
hides it with the rest of $SVC_HOME.

Why a key as well as the folder's mode: reaching a socket and reading a file are separate rights
in the sandboxes a hosted agent may run in (Landlock, for one, long governed opening files but
not connecting to a named socket). A process that can connect but not read $SVC_HOME gets an
error, not a shell.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from holder.paths import KEY

KEY_BYTES = 32


def make(directory: Path) -> str:
    """A fresh key for this holder, in `directory`'s key file (replaced whole, never shown half
    written), returned."""
    key = secrets.token_hex(KEY_BYTES)
    fresh = directory / f"{KEY}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        fresh.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(fresh, flags, 0o600)
    try:
        os.write(fd, key.encode())
    finally:
        os.close(fd)
    os.replace(fresh, directory / KEY)
    return key


def read(dir_fd: int) -> str:
    """The key in the holder folder open as `dir_fd`; "" when there is none (a holder of an
    older svc has none). PermissionError when the file is not this user's alone."""
    try:
        fd = os.open(KEY, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise PermissionError(f"{KEY} is not a file of this user's alone: not using it")
        return os.read(fd, 4 * KEY_BYTES).decode("ascii", "replace").strip()
    finally:
        os.close(fd)


def matches(given: object, key: str) -> bool:
    """Whether `given` (from a frame: any JSON value) is the key, in constant time."""
    if not isinstance(given, str) or not key:
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), key.encode())
