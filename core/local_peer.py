"""Which local user opened the other end of a loopback TCP connection (the bridge gate's last
rule, contract §2; docs/security.md, attacker 5).

The bridge routes take no token, so any process that can open a loopback connection could call
them — on a shared machine, every user's. On Linux the kernel knows the uid that created each
TCP socket. A loopback connection has two sockets: svc's end (local = svc's address, svc's uid)
and the caller's end, whose *local* address is the connection's client end and whose *remote*
address is svc's end. Only the caller's counts; asking about svc's own end would pass everyone.

How it is asked: sock_diag's exact lookup (core.sock_diag), a hash lookup in the kernel,
~0.1 ms whatever the number of sockets. Where sock_diag cannot answer (a kernel without
inet_diag, gVisor), /proc/net/tcp and tcp6 are searched instead: that walks the kernel's whole
connection table on every read (~5 ms of kernel time here, more with many sockets), read in
64 KiB pieces, searched as bytes, stopping at the match. A probe on a connection of svc's own
picks one, once. Callers look up once per connection (core.server_compat), not per request.

A socket no process holds any more (inode 0: closed, orphaned, TIME_WAIT — the kernel shows
uid 0 for those) is never taken as the caller: else a caller could send its request, close at
once, and pass as root.

Elsewhere (macOS, the BSDs) no such table is readable without a privileged tool: `supported()`
is False there and the gate is contract §2's rules alone (docs/security.md says so).
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from core import sock_diag

logger = logging.getLogger(__name__)

PROC_NET = Path("/proc/net")
CHUNK = 64 * 1024
ROOT_UID = 0

Address = tuple[str, int]
Spelling = tuple[int, bytes, int, bytes, int]  # family, client address & port, svc's
Finder = Callable[[Spelling], int | None]


def supported() -> bool:
    """Whether this system tells a loopback peer's uid (Linux)."""
    return sys.platform.startswith("linux")


def may_call(uid: int) -> bool:
    """The user svc runs as, or root: root reads svc's auth.json and its memory anyway, so
    refusing it would protect nothing and break `sudo` tools (docs/security.md)."""
    return uid in (os.geteuid(), ROOT_UID)


def socket_uid(client: Address, server: Address) -> int | None:
    """The uid that created the client end of the TCP connection `client` → `server`, while a
    process still holds it; None when no such socket is known."""
    find = _finder()
    for spelling in _spellings(client, server):
        found = find(spelling)
        if found is not None:
            return found
    return None


def _spellings(client: Address, server: Address) -> list[Spelling]:
    """How the client's socket may be known. A dual-stack listener sees an IPv4 caller as
    ::ffff:a.b.c.d: that caller's socket is usually an IPv4 one, or an IPv6 socket that
    dialled the mapped address."""
    try:
        peer, own = ipaddress.ip_address(client[0]), ipaddress.ip_address(server[0])
    except ValueError:
        return []
    found: list[tuple[int, bytes, int, bytes, int]] = []
    peer4 = peer if peer.version == 4 else peer.ipv4_mapped
    own4 = own if own.version == 4 else own.ipv4_mapped
    if peer4 is not None and own4 is not None:
        found.append((socket.AF_INET, peer4.packed, client[1], own4.packed, server[1]))
    if peer.version == 6 and own.version == 6:
        found.append((socket.AF_INET6, peer.packed, client[1], own.packed, server[1]))
    return found


def by_sock_diag(spelling: Spelling) -> int | None:
    family, peer, peer_port, own, own_port = spelling
    try:
        found = sock_diag.lookup(family, (peer, peer_port), (own, own_port))
    except OSError:
        return None
    return found.uid if found is not None and found.inode else None


def by_proc(spelling: Spelling, proc_net: Path = PROC_NET) -> int | None:
    family, peer, peer_port, own, own_port = spelling
    table = proc_net / ("tcp" if family == socket.AF_INET else "tcp6")
    return _search(table, b": " + _hex(peer, peer_port) + b" " + _hex(own, own_port) + b" ")


def _hex(packed: bytes, port: int) -> bytes:
    """/proc's spelling: each 32-bit word of the address as it lies in memory (host byte
    order), in upper-case hex, then the port."""
    words = [int.from_bytes(packed[i : i + 4], sys.byteorder) for i in range(0, len(packed), 4)]
    return ("".join(f"{w:08X}" for w in words) + f":{port:04X}").encode()


def _search(table: Path, key: bytes) -> int | None:
    """Read `table` in pieces until a held socket's line starts with `key`: its uid."""
    try:
        with open(table, "rb", buffering=0) as lines:
            rest = b""
            while chunk := lines.read(CHUNK):
                rest += chunk
                whole = rest.rfind(b"\n") + 1
                if (found := _held_uid(rest[:whole], key)) is not None:
                    return found
                rest = rest[whole:]
    except OSError:
        return None
    return None


def _held_uid(text: bytes, key: bytes) -> int | None:
    at = text.find(key)
    while at >= 0:
        end = text.find(b"\n", at)
        # st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
        fields = text[at + len(key) : end].split()
        if len(fields) > 6 and fields[6] != b"0" and fields[4].isdigit():
            return int(fields[4])
        at = text.find(key, end)
    return None


@functools.cache
def _finder() -> Finder:
    """sock_diag when it finds a connection of svc's own, else /proc (checked the same way)."""
    for finder in (by_sock_diag, by_proc):
        if _finds_own_connection(finder):
            return finder
    logger.error(
        "svc cannot tell which local user opens a loopback connection: the bridge "
        "refuses every caller (neither sock_diag nor /proc/net/tcp answered)"
    )
    return lambda spelling: None


def _finds_own_connection(finder: Finder) -> bool:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with socket.create_connection(listener.getsockname(), timeout=2) as client:
            accepted, _ = listener.accept()
            with accepted:
                spelling = _spellings(client.getsockname(), listener.getsockname())[0]
                return finder(spelling) == os.geteuid()
