"""Where a holder lives: `<home>/holder/` (0700), its socket (0600), lock, log and journals.

A Unix socket path may be at most 107 bytes; under a deep $SVC_HOME the socket goes to a 0700
folder of its own under the system's temporary folder, named from the home's path, instead.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

SOCKET_PATH_MAX = 107


def holder_dir(home: Path) -> Path:
    return home / "holder"


def socket_path(directory: Path) -> Path:
    path = directory / "holder.sock"
    if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
        return path
    digest = hashlib.sha256(os.fsencode(directory)).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"svc-holder-{os.getuid()}-{digest}" / "holder.sock"


def session_dir(directory: Path, session_id: str) -> Path:
    if not session_id or "/" in session_id or session_id.startswith("."):
        raise ValueError(f"not a session id: {session_id!r}")
    return directory / "sessions" / session_id


def private_dir(path: Path) -> Path:
    """`path` as a folder only this user can enter: made 0700, or refused when it is someone
    else's or others may write into it (a socket there could be swapped)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a folder of this user's")
    if info.st_mode & 0o077:
        path.chmod(0o700)
    return path
