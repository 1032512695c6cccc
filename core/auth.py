"""Tokens and guards: who may use which surface (contract §2).

The owner token opens the dashboard, /api/, WebSockets and owner previews; the MCP token opens /mcp
only. Both are always compared in constant time, and neither is ever written to a log. Browsers
hold no token at all: they log in to a session on svc's own host name (core.browser).
"""

from __future__ import annotations

import functools
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.functional import SimpleLazyObject
from rest_framework import authentication, permissions
from rest_framework.request import Request

from core import browser
from core.asgi_helpers import header
from core.tokens import token_kind

# Surfaces behind the owner token. Everything else has its own rule: /svc/ the loopback gate,
# /preview/s/ (share) none, /admin/ Django's login (which /login performs), /login the token itself.
_OWNER_PREFIXES = ("/api/", "/preview/u/", "/md-preview/", "/docs/")
_OWNER_EXACT = ("/",)
_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


@functools.lru_cache(maxsize=64)
def peer_is_loopback(peer: str) -> bool:
    """The TCP peer's address is a loopback one (IPv4-mapped IPv6 included). Cached: it is asked
    on every request and a daemon sees only a handful of peers."""
    try:
        ip = ipaddress.ip_address(peer)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def bearer(value: str | None) -> str | None:
    if value and value[:7].lower() == "bearer ":
        return value[7:].strip()
    return None


def token_from_scope(scope: dict[str, Any]) -> tuple[str | None, str]:
    """Token from an ASGI scope: the Authorization header, then ?token=. Never a cookie: the
    browser holds a session id instead (core.browser). No token counts on the remote
    listener (contract §13)."""
    if scope.get("svc_remote"):
        return None, ""
    headers = dict(scope.get("headers") or [])
    found = bearer(headers.get(b"authorization", b"").decode("latin-1"))
    if found:
        return found, "header"
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if query.get("token"):
        return query["token"][0], "query"
    return None, ""


async def scope_owner_via(scope: dict[str, Any]) -> str:
    """How an ASGI request proves it is the owner: "header", "query", "session", "remote" (a
    paired browser on the remote listener, remote_app.gate) or ""."""
    if scope.get("svc_remote"):
        return "remote" if scope.get("svc_device") else ""
    token, via = token_from_scope(scope)
    if token_kind(token) == "owner":
        return via
    if await sync_to_async(browser.scope_session_owner)(scope):
        return "session"
    return ""


def token_from_request(request: HttpRequest) -> tuple[str | None, str]:
    found = bearer(request.headers.get("Authorization"))
    if found:
        return found, "header"
    if request.GET.get("token"):
        return request.GET["token"], "query"
    return None, ""


def unauthorized_json(message: str = "") -> JsonResponse:
    body = {
        "error": {
            "status": 401,
            "code": "not_authenticated",
            "message": message
            or "Missing or wrong owner token. Send 'Authorization: Bearer <owner_token>' "
            "(see $SVC_HOME/auth.json) or open the login URL printed at start-up.",
        }
    }
    response = JsonResponse(body, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="svc"'
    return response


def _needs_owner(path: str) -> bool:
    return path in _OWNER_EXACT or path.startswith(_OWNER_PREFIXES)


def _owner() -> Any:
    # Read only if something uses it (the admin, a record naming who): most API requests never
    # do, and the read was half of a small request's time.
    return SimpleLazyObject(browser.owner_user)


class OwnerTokenMiddleware:
    """Marks owner requests (token, or a browser session on the dashboard host) and refuses
    owner-only paths to anyone else. A session is never honoured on another host."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        scope = getattr(request, "scope", None) or {}
        token, via = token_from_request(request)
        if scope.get("svc_remote"):  # the remote listener: its gate knows the device, or none
            via = "remote" if scope.get("svc_device") else ""
            request.svc_auth_via = via
            request.user = _owner() if via else AnonymousUser()
        elif token_kind(token) == "owner":
            request.svc_auth_via = via
            request.user = _owner()
        elif scope.get("svc_fleet"):
            # Built in this process for a fleet member's signed request (fleet_app.inbound):
            # no client can set a scope key.
            request.svc_auth_via = "fleet"
            request.user = _owner()
        elif browser.session_owner(request):
            request.svc_auth_via = "session"
        else:
            request.svc_auth_via = ""
            request.user = AnonymousUser()
        request.svc_owner = bool(request.svc_auth_via)
        if not request.svc_owner and _needs_owner(request.path):
            if scope.get("svc_remote"):  # `/` there is the pairing page; the rest stays shut
                return self.get_response(request) if request.path == "/" else unauthorized_json()
            return browser.dashboard_redirect(request) or unauthorized_json()
        return self.get_response(request)


class OwnerTokenAuthentication(authentication.BaseAuthentication):
    """DRF side: a token, or a browser session that must pass CSRF (the secret lives in the
    server-side session, so a cookie planted by another local page proves nothing)."""

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        raw = request._request
        if not getattr(raw, "svc_owner", False):
            return None
        # "remote": the gate already required the dashboard page's key, which no other page has.
        if raw.svc_auth_via == "session":
            authentication.SessionAuthentication().enforce_csrf(request)
        return (raw.user, None)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="svc"'


class IsOwner(permissions.BasePermission):
    """DRF: only the owner (OwnerTokenAuthentication said so). Unlike IsAuthenticated it does
    not load the user row to ask it: the request already knows."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(getattr(request._request, "svc_owner", False))


# --- ASGI guards --------------------------------------------------------------------------------

ASGIApp = Callable[
    [dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]
]


def origin_allowed(origin: str | None, server_port: int | None) -> bool:
    """Absent, or http(s)://localhost|127.0.0.1|[::1]|<dashboard host> on svc's own port."""
    if origin is None:
        return True
    for scheme in ("http://", "https://"):
        for host in (*_LOOPBACK_HOSTS, browser.browser_host()):
            if origin == f"{scheme}{host}:{server_port}":
                return True
    return False


def _header(scope: dict, name: bytes) -> str | None:
    return header(scope, name) or None


class WebSocketGuard:
    """Exact Origin check before accept (403), then the owner token (accept + close 4401).

    Channels' AllowedHostsOriginValidator ignores ports, so any other local dev server — including
    the pages svc previews — could open a terminal socket. This compares the full origin."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        if scope.get("svc_remote"):  # remote_app.gate checked origin, device and page key
            await self.app(scope, receive, send)
            return
        server_port = (scope.get("server") or (None, None))[1]
        if not origin_allowed(_header(scope, b"origin"), server_port):
            await send({"type": "websocket.close", "code": 4403})
            return
        if not await scope_owner_via(scope):
            await receive()  # the websocket.connect message
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": 4401})
            return
        await self.app(scope, receive, send)


async def send_json(send: Callable, status: int, body: dict, headers: Iterable = ()) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": payload})
