"""Where a holder lives: `<home>/holder/` (0700), its socket (0600), key (0600), lock, pid, log
and journals.

The socket is always `<home>/holder/holder.sock`, however deep $SVC_HOME is. A Unix socket's
address holds at most 107 bytes, so both sides name it through a descriptor of the folder
(`/proc/self/fd/<n>/holder.sock`): short whatever the home's length, and the very folder that
was checked (no swap between the check and the connect). Nothing is ever put in the shared
temporary folder, which every local user may write into (issue 41); svc only looks there, with
checks, for a holder an older svc left running (`legacy_socket_dir`).

Both sides use the canonical path (symlinks resolved): a home reached through a symlink is one
folder, one socket and one name in `ps`, whichever way svc was started.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

SOCKET = "holder.sock"
KEY = "holder.key"
PID = "holder.pid"
LOCK = "holder.lock"
LOG = "holder.log"
SOCKET_PATH_MAX = 107  # what an older holder allowed itself before it went to the temp folder
# Where an older holder started by svc put its socket when the home was deep: svc started it with
# no TMPDIR in its environment, so Python's temporary folder was this one.
LEGACY_TEMP = Path("/tmp")  # noqa: S108 (only looked at, never written to, and checked)


def canonical(path: Path) -> Path:
    return Path(os.path.realpath(path))


def holder_dir(home: Path) -> Path:
    return canonical(home) / "holder"


def in_dir(dir_fd: int, name: str) -> str:
    """A short path to `name` in the folder open as `dir_fd` (a socket's address, say)."""
    return f"/proc/self/fd/{dir_fd}/{name}"


def legacy_socket_dir(directory: Path) -> Path | None:
    """The folder an older holder (before issue 41) of `directory` listened in when its socket
    path was too long; None when it was short enough to be in `directory` itself."""
    directory = canonical(directory)
    if len(os.fsencode(directory / SOCKET)) <= SOCKET_PATH_MAX:
        return None
    digest = hashlib.sha256(os.fsencode(directory)).hexdigest()[:16]
    return LEGACY_TEMP / f"svc-holder-{os.getuid()}-{digest}"


def is_session_id(session_id: str) -> bool:
    """A name a session's folder can have: one path component, not hidden."""
    return bool(session_id) and not (
        "/" in session_id or "\0" in session_id or session_id[0] == "."
    )


def session_dir(directory: Path, session_id: str) -> Path:
    if not is_session_id(session_id):
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


def open_private_dir(path: Path) -> int:
    """An O_PATH descriptor of the folder `path`, once it is checked to be this user's alone: a
    real folder (not a symlink), owned by this user, closed to everyone else. PermissionError,
    saying which, otherwise; FileNotFoundError when there is none."""
    info = os.lstat(path)
    if problem := _not_private(info):
        raise PermissionError(f"{path} {problem}")
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino) or _not_private(now):
        os.close(fd)
        raise PermissionError(f"{path} was replaced while it was being checked")
    return fd


def _not_private(info: os.stat_result) -> str:
    if stat.S_ISLNK(info.st_mode):
        return "is a symlink, not a folder"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid != os.getuid():
        return f"belongs to uid {info.st_uid}, not to this user (uid {os.getuid()})"
    if info.st_mode & 0o077:
        return f"is open to others (mode {stat.S_IMODE(info.st_mode):o}; `chmod 700` it)"
    return ""


def read_pid(dir_fd: int) -> int:
    """The pid in the holder's `holder.pid` (0 when there is none or it is not a number)."""
    try:
        fd = os.open(PID, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return 0
    try:
        return int(os.read(fd, 64).strip() or 0)
    except ValueError:
        return 0
    finally:
        os.close(fd)
