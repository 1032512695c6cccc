"""Limits and credentials on the request line and headers, before any body is read (contract §11).

The server hook (core.server_compat) calls `admit` as soon as the headers are in, while the
client still holds the body: an announced body over its limit gets 413, a request without the
credential its surface needs gets 401 (403 for the bridge gate), and nothing of the body is
buffered. `body_limit` then cuts a chunked body off at the limit. The apps check everything again
(they never trust this layer alone); this layer only makes refusals cheap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from bridge_app import dialects, gate, routes
from core import auth, browser, server_compat
from core.asgi_helpers import cookie_in, header_in
from core.runtime import Reach
from mcp_app.asgi import unauthorized_body
from previews_app import grants, origin
from remote_app.pairing import cookie_signed
from remote_app.routes import MAIN_PORT_ONLY, REMOTE_COOKIE, remote_write_allowed, route_of

BRIDGE_LIMIT = 64 * 1024 * 1024  # contract §11
OTHER_LIMIT = 4 * 1024 * 1024
PREVIEW_LIMIT = 64 * 1024 * 1024  # the owner's uploads to the previewed dev server
_BRIDGE = ("/svc/local-api/", "/svc/local-agent/", "/svc/bridge/")


@dataclass(frozen=True)
class Head:
    """What is known of a request once its headers are in."""

    method: str
    path: str  # decoded, without the query
    query: bytes
    headers: list[tuple[bytes, bytes]]  # lower-case names, as in an ASGI scope
    peer: str
    length: int | None  # Content-Length; None when chunked or absent
    server_port: int | None = None
    # The server's connection (daphne's channel), where the peer's uid is learned once
    # (core.server_compat); None when the head was made without one.
    connection: object | None = field(default=None, compare=False, repr=False)

    def header(self, name: bytes) -> str:
        return header_in(self.headers, name)

    def scope(self) -> dict[str, Any]:
        return {
            "type": "http",
            "method": self.method,
            "path": self.path,
            "query_string": self.query,
            "headers": self.headers,
            "client": (self.peer, 0),
            "server": ("127.0.0.1", self.server_port),
        }


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


def body_limit(head: Head) -> int:
    if head.path.startswith(_BRIDGE):
        return BRIDGE_LIMIT
    if head.path.startswith("/preview/u/") or _preview_origin(head):
        return PREVIEW_LIMIT
    return OTHER_LIMIT


def _json(status: int, body: dict[str, Any], *headers: tuple[bytes, bytes]) -> Answer:
    return Answer(
        status, json.dumps(body).encode(), [(b"content-type", b"application/json"), *headers]
    )


def _error(status: int, code: str, message: str) -> Answer:
    return _json(status, {"error": {"status": status, "code": code, "message": message}})


def _bridge_refusal(head: Head, too_big: bool) -> Answer | None:
    reason = gate_refusal(head)
    if reason is None and not too_big:
        return None
    route = routes.parse(head.path, head.query)
    codec = dialects.get(route.dialect if route else "openai-chat")
    if reason is not None:
        return _json(403, codec.encode_error(403, reason))
    message = f"request body larger than {BRIDGE_LIMIT} bytes"
    return _json(413, codec.encode_error(413, message))


def gate_refusal(head: Head) -> str | None:
    """Contract §2's rules on the headers, then (on a connection the server handed over) which
    local user opened it: another user's body is never read."""

    if reason := gate.refusal(head.scope()):
        return reason
    if head.connection is None:
        return None  # the app asks again, on the connection it is served on
    return gate.user_refusal(server_compat.connection_peer_uid(head.connection))


def _preview_origin(head: Head) -> str | None:
    return origin.origin_slug(head.header(b"host")) or None


def _has_owner_credential(head: Head) -> bool:
    """An owner token, or a session cookie on the dashboard host (its validity is the app's to
    judge: reading the session store here would block the server; the body limit still holds)."""
    token, _ = auth.token_from_scope(head.scope())
    if auth.token_kind(token) == "owner":
        return True
    if not browser.is_browser_host(head.header(b"host")):
        return False
    return bool(_cookie(head, "svc_session"))


def _cookie(head: Head, name: str) -> str:
    return cookie_in(head.header(b"cookie"), name)


def _preview_owner(head: Head, slug: str) -> bool:
    token, _ = auth.token_from_scope(head.scope())
    return grants.cookie_opens(_cookie(head, grants.COOKIE_NAME), slug) or (
        auth.token_kind(token) == "owner"
    )


def _credential_refusal(head: Head) -> Answer | None:
    if head.path.rstrip("/") == "/mcp":
        token, _ = auth.token_from_scope(head.scope())
        if auth.token_kind(token) == "mcp":
            return None

        return _json(401, unauthorized_body(), (b"www-authenticate", b'Bearer realm="svc-mcp"'))
    if head.path.startswith("/preview/s/"):
        return _error(405, "method", "a shared preview answers GET and HEAD only")
    if (slug := _preview_origin(head)) is not None:
        return None if _preview_owner(head, slug) else _error(401, "login", "log in first")
    if _has_owner_credential(head):
        return None
    return _error(401, "not_authenticated", "missing or wrong owner token")


def _on_remote_listener(head: Head, reach: Reach | None) -> bool:
    return reach is not None and reach.is_remote_port(head.server_port)


def _remote_refusal(head: Head, too_big: bool) -> Answer | None:
    """The remote listener's rules (remote_app.gate), on the headers of a request that carries a
    body: only a paired browser's writes may send one. What it never serves gets 404; pairing,
    the dashboard page, static files and shares take no body; a cookie that svc did not sign
    gets 401 and a write a paired device may not make 403 — all before the body is read, so a
    stranger can never make svc hold a body in memory (contract §13, the listener's budget)."""

    route = route_of(head.path)
    if route in ("refused", "other"):
        return _error(404, "not_found", "not served on svc's remote listener")
    if head.path.startswith("/preview/s/"):
        return _error(405, "method", "a shared preview answers GET and HEAD only")
    if route != "paired":
        return _error(413, "no_body", "this page takes no request body")
    if not cookie_signed(_cookie(head, REMOTE_COOKIE)):
        return _error(401, "not_paired", "pair this browser first")
    if not remote_write_allowed(head.method, head.path):
        return _error(403, "main_port_only", MAIN_PORT_ONLY)
    if too_big:
        return _error(413, "too_large", f"request body larger than {body_limit(head)} bytes")
    return None


def admit(head: Head, reach: Reach | None = None) -> Answer | None:
    """None to go on reading the body; else the answer to send now. Only requests that carry a
    body are judged here: the rest reach the app, which decides as it always does. `reach` says
    which ports are the remote listener's (the daemon's parts; None: no remote listener)."""
    chunked = "chunked" in head.header(b"transfer-encoding").lower()
    if not chunked and not head.length:
        return None
    too_big = head.length is not None and head.length > body_limit(head)
    if _on_remote_listener(head, reach):
        return _remote_refusal(head, too_big)
    if head.path.startswith(_BRIDGE):
        return _bridge_refusal(head, too_big)
    if refusal := _credential_refusal(head):  # who may send a body at all comes first
        return refusal
    if too_big:
        limit = body_limit(head)
        return _error(413, "too_large", f"request body larger than {limit} bytes")
    return None


def head_of(
    method: bytes,
    target: bytes,
    headers: list[tuple[bytes, bytes]],
    peer: str,
    length: int | None,
    server_port: int | None = None,
    connection: object | None = None,
) -> Head:
    path, _, query = target.partition(b"?")
    return Head(
        method.decode("latin-1"),
        unquote(path.decode("latin-1")),
        query,
        [(k.lower(), v) for k, v in headers],
        peer,
        length,
        server_port,
        connection,
    )
