"""The loopback gate of contract §2 for the token-less bridge routes.

Peer loopback alone is not enough: every same-host tunnel connects from 127.0.0.1. So the Host
must name a loopback host, a browser Origin must be local, and any forwarding header (judged by
presence, not value) marks the request as relayed and refuses it.

Nor is loopback one user: on a shared machine every user's processes reach 127.0.0.1. On Linux
the last rule asks the kernel which user opened the caller's end of the connection
(core.local_peer) and answers only the user svc runs as (and root, which can read svc's tokens
anyway); elsewhere the rules above are the whole gate (docs/security.md, attacker 5).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

from core import local_peer, server_compat

# Headers a proxy or tunnel adds (contract §2), judged by presence, not value.
FORWARDING = frozenset(
    {
        b"forwarded",
        b"x-forwarded-for",
        b"x-forwarded-host",
        b"x-forwarded-proto",
        b"x-forwarded-port",
        b"x-original-forwarded-for",
        b"x-real-ip",
        b"true-client-ip",
        b"cf-connecting-ip",
        b"cf-ray",
        b"fastly-client-ip",
        b"via",
        b"tailscale-funnel-request",
    }
)
FORWARDING_PREFIXES = (b"ngrok-",)
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
HOST = re.compile(r"^(?:\[(?P<v6>[0-9a-fA-F:.]+)\]|(?P<name>[^:\[\]]+))(?::(?P<port>\d{1,5}))?$")


def _loopback_ip(value: str) -> bool:
    if value in ("127.0.0.1", "::1"):  # the common case, without ipaddress's parser (~70 µs)
        return True
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        return False
    # A dual-stack listener reports IPv4 peers as ::ffff:127.0.0.1 (3.12 calls that non-loopback).
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def host_is_loopback(host: str) -> bool:
    """`localhost`, `127.0.0.1`, `[::1]`, `::1`, each with an optional valid port."""
    if host in ("::1",):
        return True
    m = HOST.match(host)
    if not m or (m.group("port") and not 0 < int(m.group("port")) < 65536):
        return False
    name = (m.group("v6") or m.group("name") or "").lower()
    return name in LOOPBACK_NAMES


def origin_is_local(origin: str) -> bool:
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    return host_is_loopback(parts.netloc)


def refusal(scope: dict[str, Any]) -> str | None:
    """Why this request may not use the bridge, or None when it may."""
    client = scope.get("client") or ("", 0)
    if not _loopback_ip(str(client[0])):
        return "the bridge only answers loopback clients"
    host = origin = None
    for name, value in scope.get("headers") or []:
        if name in FORWARDING or name.startswith(FORWARDING_PREFIXES):
            return "the bridge refuses relayed requests (forwarding header present)"
        if name == b"host":
            host = value.decode("latin-1")
        elif name == b"origin":
            origin = value.decode("latin-1")
    if host is None or not host_is_loopback(host):
        return "the bridge only answers requests addressed to a loopback host"
    if origin is not None and not origin_is_local(origin):
        return "the bridge refuses requests from non-local web origins"
    if origin is not None and _same_port(origin, scope):
        # A page svc serves itself on its own port (a shared preview is untrusted code) must
        # not spend the owner's model keys; svc's own pages never call the bridge.
        return "the bridge refuses pages served by svc itself"
    return None


def _same_port(origin: str, scope: dict[str, Any]) -> bool:
    server_port = (scope.get("server") or (None, None))[1]
    try:
        port = urlsplit(origin).port or 80
    except ValueError:
        return False
    return server_port is not None and port == server_port


def user_refusal(uid: int | None) -> str | None:
    """Why the local user `uid` (None: unknown) may not use the bridge, or None when it may."""
    if not local_peer.supported():
        return None
    if uid is None:
        return (
            "svc could not tell which local user opened this connection; the bridge only "
            "answers the user svc runs as"
        )
    if local_peer.may_call(uid):
        return None
    return (
        f"the bridge only answers processes of the user svc runs as; this connection was "
        f"opened by uid {uid}"
    )


def caller_refusal(scope: dict[str, Any], send: object) -> str | None:
    """`user_refusal` for the connection behind this request: daphne's, asked once per
    connection; under another server (or in-process), the addresses the scope names."""
    if not local_peer.supported():
        return None
    connection = server_compat.connection_behind(send)
    if connection is not None:
        return user_refusal(server_compat.connection_peer_uid(connection))
    return user_refusal(_scope_uid(scope))


def _scope_uid(scope: dict[str, Any]) -> int | None:
    client, server = scope.get("client"), scope.get("server")
    try:
        return local_peer.socket_uid(
            (str(client[0]), int(client[1])),  # type: ignore[index]
            (str(server[0]), int(server[1])),  # type: ignore[index]
        )
    except (TypeError, ValueError, IndexError):
        return None
