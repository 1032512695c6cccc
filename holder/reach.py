"""svc's way to its holder's socket, checked on every connection (issue 41).

Before a byte is sent: the socket's folder is this user's alone (a real folder, not a symlink,
owned by this user, closed to others: holder/paths.py); the connection goes through a
descriptor of that very folder; and the process on the other end is this user's holder: its uid
(SO_PEERCRED) is this user's and its pid the one in `holder.pid` under $SVC_HOME. Only then is
the key read and sent (holder/key.py). Anything else is refused with a HolderError saying what
was found, and nothing is sent.

A holder of an older svc under a deep home listens in the shared temporary folder
(paths.legacy_socket_dir). svc connects there only when that folder passes the same checks and
the listener is the holder whose pid is in holder.pid, which no other process can arrange; a
folder that fails them (another user's, planted where the name is predictable) is ignored with a
warning, and svc starts a holder of its own in $SVC_HOME.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

from holder import key as holder_key
from holder import paths

logger = logging.getLogger(__name__)


class HolderError(Exception):
    pass


@dataclass
class Reached:
    """A connection to the holder, checked; the key to send in its first frame."""

    sock: socket.socket
    key: str
    folder: Path  # where its socket is


async def reach(directory: Path, *, legacy: bool = False) -> Reached:
    """A checked connection to the holder of `directory`; with `legacy`, to an older svc's
    holder in the temporary folder when none listens in `directory`. FileNotFoundError or
    ConnectionRefusedError when none listens; HolderError when one is refused."""
    try:
        return await _reach_in(directory, directory)
    except (FileNotFoundError, ConnectionRefusedError):
        old = paths.legacy_socket_dir(directory) if legacy else None
        if old is None:
            raise
    try:
        return await _reach_in(old, directory)
    except (FileNotFoundError, ConnectionRefusedError):
        raise  # the folder an older holder left behind when it exited
    except (HolderError, OSError) as exc:
        logger.warning("not using %s for this user's holder: %s", old, exc)
        raise FileNotFoundError(f"no holder listens in {directory}") from None


async def _reach_in(folder: Path, directory: Path) -> Reached:
    """The socket in `folder` (the holder's own, or an older holder's), its peer checked against
    the holder of `directory`."""
    with contextlib.ExitStack() as fds:
        folder_fd = _open_checked(folder)
        fds.callback(os.close, folder_fd)
        home_fd = folder_fd
        if folder != directory:
            home_fd = _open_checked(directory)
            fds.callback(os.close, home_fd)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(
                sock, paths.in_dir(folder_fd, paths.SOCKET)
            )
            check_peer(sock, home_fd, folder)
            key = holder_key.read(home_fd)
        except PermissionError as exc:
            sock.close()
            raise HolderError(f"refusing the holder in {folder}: {exc}") from None
        except BaseException:
            sock.close()
            raise
        return Reached(sock, key, folder)


def _open_checked(folder: Path) -> int:
    try:
        return paths.open_private_dir(folder)
    except PermissionError as exc:
        raise HolderError(f"refusing the holder's socket: {exc}") from None


def check_peer(sock: socket.socket, home_fd: int, folder: Path) -> None:
    """The process on the other end of `sock` is this user's holder, or HolderError."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    if uid != os.getuid():
        raise HolderError(
            f"the socket in {folder} is served by uid {uid}, not by this user: refusing it"
        )
    recorded = paths.read_pid(home_fd)
    if recorded <= 0 or pid != recorded:  # (0: a peer in a pid namespace svc cannot see)
        raise HolderError(
            f"the socket in {folder} is served by pid {pid}, not by the holder "
            f"(holder.pid says {recorded or 'nothing'}): refusing it"
        )
