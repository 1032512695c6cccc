"""Tokens and guards: who may use which surface (SPEC §2).

The owner token opens the dashboard, /api/, WebSockets and owner previews; the MCP token opens /mcp
only. Both are always compared in constant time, and neither is ever written to a log.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Iterable
from http.cookies import SimpleCookie
from typing import Any, Literal
from urllib.parse import parse_qs

from django.contrib.auth import get_user_model, login, logout
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from rest_framework import authentication
from rest_framework.request import Request

from svcproject import config

TokenKind = Literal["owner", "mcp"]
COOKIE_NAME = "svc_token"
OWNER_USERNAME = "owner"

# Surfaces behind the owner token. Everything else has its own rule: /svc/ the loopback gate,
# /preview/s/ (share) none, /admin/ Django's login (which /login performs), /login the token itself.
_OWNER_PREFIXES = ("/api/", "/preview/u/", "/md-preview/")
_OWNER_EXACT = ("/",)
_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def token_kind(token: str | None) -> TokenKind | None:
    """Which token this is. Both comparisons always run, so timing says nothing."""
    if not token:
        return None
    auth = config.current_auth()
    given = token.encode()
    is_owner = hmac.compare_digest(given, auth.owner_token.encode())
    is_mcp = hmac.compare_digest(given, auth.mcp_token.encode())
    if is_owner:
        return "owner"
    if is_mcp:
        return "mcp"
    return None


def bearer(value: str | None) -> str | None:
    if value and value[:7].lower() == "bearer ":
        return value[7:].strip()
    return None


def token_from_scope(scope: dict[str, Any]) -> tuple[str | None, str]:
    """Token from an ASGI scope: Authorization header, then ?token=, then the login cookie."""
    headers = dict(scope.get("headers") or [])
    found = bearer(headers.get(b"authorization", b"").decode("latin-1"))
    if found:
        return found, "header"
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if query.get("token"):
        return query["token"][0], "query"
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get(b"cookie", b"").decode("latin-1"))
    except Exception:  # a malformed Cookie header is just no cookie
        return None, ""
    morsel = cookie.get(COOKIE_NAME)
    return (morsel.value, "cookie") if morsel else (None, "")


def token_from_request(request: HttpRequest) -> tuple[str | None, str]:
    found = bearer(request.headers.get("Authorization"))
    if found:
        return found, "header"
    if request.GET.get("token"):
        return request.GET["token"], "query"
    if request.COOKIES.get(COOKIE_NAME):
        return request.COOKIES[COOKIE_NAME], "cookie"
    return None, ""


def owner_user() -> Any:
    user, created = get_user_model().objects.get_or_create(
        username=OWNER_USERNAME, defaults={"is_staff": True, "is_superuser": True}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


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


def token_fingerprint(token: str) -> str:
    """What a browser session remembers of the token it logged in with (never the token)."""
    return hmac.new(token.encode(), b"svc-login-session", "sha256").hexdigest()


def _session_still_valid(request: HttpRequest) -> bool:
    """A login made with a token that has since been rotated away ends here."""
    remembered = request.session.get("svc_token_fp", "")
    current = token_fingerprint(config.current_auth().owner_token)
    return hmac.compare_digest(remembered.encode(), current.encode())


def _needs_owner(path: str) -> bool:
    return path in _OWNER_EXACT or path.startswith(_OWNER_PREFIXES)


class OwnerTokenMiddleware:
    """Marks requests carrying the owner token and refuses owner-only paths without it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token, via = token_from_request(request)
        request.svc_owner = token_kind(token) == "owner"  # type: ignore[attr-defined]
        request.svc_auth_via = via if request.svc_owner else ""  # type: ignore[attr-defined]
        if request.user.is_authenticated and not _session_still_valid(request):
            logout(request)
        if request.svc_owner and not request.user.is_authenticated:
            request.user = owner_user()
        if not request.svc_owner and _needs_owner(request.path):
            return unauthorized_json()
        return self.get_response(request)


class OwnerTokenAuthentication(authentication.BaseAuthentication):
    """DRF side of the owner token. Cookie-borne requests must pass CSRF like a session would:
    other localhost ports are same-site, so SameSite=Strict alone does not stop them."""

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        raw = request._request
        if not getattr(raw, "svc_owner", False):
            return None
        if raw.svc_auth_via == "cookie":
            authentication.SessionAuthentication().enforce_csrf(request)
        return (owner_user(), None)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="svc"'


def login_view(request: HttpRequest) -> HttpResponse:
    """GET /login?token=…: sets the HttpOnly cookie, logs into admin, redirects to a clean URL."""
    token = request.GET.get("token", "")
    if token_kind(token) != "owner":
        return HttpResponse(
            "<!doctype html><title>svc: log in</title><h1>Log in to svc</h1>"
            "<p>Open the login URL that <code>make run</code> printed, or "
            "<code>/login?token=</code> followed by <code>owner_token</code> from "
            "<code>$SVC_HOME/auth.json</code>.</p>",
            status=401,
        )
    login(request, owner_user(), backend="django.contrib.auth.backends.ModelBackend")
    request.session["svc_token_fp"] = token_fingerprint(token)
    target = request.GET.get("next", "/")
    if not target.startswith("/") or target.startswith("//"):
        target = "/"
    response = HttpResponseRedirect(target)
    response.set_cookie(COOKIE_NAME, token, httponly=True, samesite="Strict", path="/")
    response["Referrer-Policy"] = "no-referrer"
    return response


def login_url(host: str = "127.0.0.1") -> str:
    auth = config.current_auth()
    return f"http://{host}:{auth.port}/login?token={auth.owner_token}"


# --- ASGI guards --------------------------------------------------------------------------------

ASGIApp = Callable[
    [dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]
]


def origin_allowed(origin: str | None, server_port: int | None) -> bool:
    """Absent, or http(s)://localhost|127.0.0.1|[::1] on svc's own port — nothing else."""
    if origin is None:
        return True
    for scheme in ("http://", "https://"):
        for host in _LOOPBACK_HOSTS:
            if origin == f"{scheme}{host}:{server_port}":
                return True
    return False


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key == name:
            return value.decode("latin-1")
    return None


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
        server_port = (scope.get("server") or (None, None))[1]
        if not origin_allowed(_header(scope, b"origin"), server_port):
            await send({"type": "websocket.close", "code": 4403})
            return
        token, _ = token_from_scope(scope)
        if token_kind(token) != "owner":
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
