"""ASGI entry of the preview surfaces, in front of Django and the WebSocket router.

- `{slug}.localhost` hosts: the owner's live preview on its own origin (origin.py).
- `/preview/u/{slug}/…`: the owner's entry. Browsers (cookie or ?token=) are sent to the preview
  origin with a one-time grant; clients presenting `Authorization: Bearer` are proxied in place,
  sandboxed, since no browser attaches that header by itself.
- `/preview/s/{share}/…`: the share, no authentication, GET/HEAD, no WebSockets, 600 s; its
  root-relative reads come back through `shares.referring_share` (docs/previews.md).
- `/md-preview/…`: only the owner check, answered as a page for browsers; Django renders.
Raw ASGI rather than Django views because bodies must stream both ways and WebSockets pass through.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from urllib.parse import parse_qsl, quote, urlencode

from asgiref.sync import sync_to_async
from django.utils import timezone

from core import auth, browser, config
from core.asgi_helpers import fetch_metadata, send_under
from previews_app import (
    grants,
    origin,
    pages,
    parts,
    proxy,
    selectors,
    services,
    shares,
    wsproxy,
)
from previews_app.models import Preview

_PATH = re.compile(r"^/preview/(?P<which>[us])/(?P<slug>[^/]+)(?P<rest>/.*)?$")
_READ_METHODS = ("GET", "HEAD")


class PreviewRouter:
    def __init__(self, app: Callable, clock: Callable[[], datetime] = timezone.now) -> None:
        self.app = app
        self.clock = clock

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        slug = origin.origin_slug(headers.get(b"host", b"").decode("latin-1"))
        if slug is not None:
            await origin.serve(scope, receive, send, slug)
            return
        match = _PATH.match(scope["path"])
        if match and match["which"] == "s" and browser.is_browser_host(_host(headers)):
            # Never run a shared page where the owner's browser session lives.
            await pages.send_redirect(send, _loopback_url(scope))
        elif match and match["which"] == "s":
            await self.share(scope, receive, send, match["slug"], match["rest"])
        elif (share := await shares.referring_share(scope, self.clock())) is not None:
            await send_to_share(scope, send, share)
        elif (
            not scope.get("svc_remote")
            and not shares.own_host(headers)
            and not scope["path"].startswith("/svc/")
        ):
            # On the main port a foreign host name (a tunnel pointed at the wrong port, DNS
            # rebinding) reaches shares only; the bridge has its own gate. The remote listener
            # has its own (remote_app.gate).
            await _refuse(scope, send, "foreign_host", headers)
        elif match:
            await owner_entry(scope, receive, send, match["slug"], match["rest"])
        elif scope["path"].startswith("/md-preview/"):
            await md_entry(scope, receive, send, self.app)
        else:
            await self.app(scope, receive, send)

    async def share(
        self, scope: dict, receive: Callable, send: Callable, share: str, rest: str | None
    ) -> None:
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4403})  # shares never open sockets
            return
        state, preview = await sync_to_async(selectors.share_lookup)(share, self.clock())
        refusal = {"missing": "not_found", "expired": "expired"}.get(state)
        if refusal is None and scope["method"] not in _READ_METHODS:
            refusal = "method"
        if refusal is None and preview is not None:
            preview, refusal = await _live_preview(scope, preview.slug)
        if refusal is not None or preview is None:
            await _refuse(scope, send, refusal or "not_found", headers)
        elif rest is None:
            await pages.send_redirect(send, f"/preview/s/{share}/")
        else:
            target = _path_target(scope, preview.port, f"/preview/s/{share}")
            if target is None:
                await _refuse(scope, send, "not_found", headers)
                return
            # Whole, as the owner sees it — but sandboxed through a tunnel whose browser gives no
            # Fetch Metadata (plain http): there the remote session could not be kept from a
            # same-origin page any other way (core.asgi_helpers.fetch_metadata).
            target.sandboxed = scope.get("svc_remote", False) and not fetch_metadata(scope)
            if preview.share_expires_at is not None:
                left = (preview.share_expires_at - self.clock()).total_seconds()
                target.seconds_left = max(left, 0.0)
            await proxy.forward(scope, receive, send, target, parts.of(scope).previews)


def _host(headers: dict[bytes, bytes]) -> str:
    return headers.get(b"host", b"").decode("latin-1")


def _loopback_url(scope: dict) -> str:
    raw = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
    query = scope.get("query_string", b"").decode("latin-1")
    return f"http://127.0.0.1:{config.svc_port()}{raw}" + (f"?{query}" if query else "")


async def send_to_share(scope: dict, send: Callable, share: str) -> None:
    """A root-relative request made by a shared page (`/app.js`, `/@vite/client`, `/api/…`):
    the same path under its share (307, so the method and body stay what they were)."""
    await send_under(scope, send, f"/preview/s/{share}")


async def md_entry(scope: dict, receive: Callable, send: Callable, app: Callable) -> None:
    """The owner check for /md-preview, as a page for browsers. A ?token= URL goes through
    /login first, so the page's images and its refresh poll carry the browser session."""
    headers = dict(scope.get("headers") or [])
    via = await auth.scope_owner_via(scope)
    if not via:
        await _refuse(scope, send, "login", headers)
    elif via == "query" and scope["type"] == "http" and scope["method"] in _READ_METHODS:
        token, _ = auth.token_from_scope(scope)
        query = _query_without_token(scope)
        following = quote(scope["path"]) + (f"?{query}" if query else "")
        await pages.send_redirect(send, "/login?" + urlencode({"token": token, "next": following}))
    else:
        await app(scope, receive, send)


def _port(scope: dict) -> int:
    return int((scope.get("server") or (None, 0))[1] or 0)


def _path_target(scope: dict, port: int, base: str) -> proxy.Target | None:
    """The upstream path is what follows `base` in the raw (still percent-encoded) path; None
    when that is not a path: `slug%2F@host:port/` decodes like `slug/…` but would otherwise make
    `@host:port` the authority of the upstream URL."""
    raw = scope.get("raw_path") or scope["path"].encode()
    prefix = base.encode()
    path = (raw[len(prefix) :] if raw.startswith(prefix) else b"") or b"/"
    if not path.startswith(b"/"):
        return None
    return proxy.Target(
        port=port,
        path=path,
        query=scope.get("query_string", b""),
        public_base=base,
        on_svc_origin=True,
    )


async def _refuse(scope: dict, send: Callable, kind: str, headers: dict[bytes, bytes]) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 4403})
    else:
        await pages.send_page(send, kind, headers, head=scope["method"] == "HEAD")


def _query_without_token(scope: dict) -> str:
    pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    return urlencode([(k, v) for k, v in pairs if k != "token"])


def _browser_port(headers: dict[bytes, bytes], scope: dict) -> int:
    host = headers.get(b"host", b"").decode("latin-1")
    tail = host.rsplit(":", 1)[-1] if ":" in host and not host.endswith("]") else ""
    return int(tail) if tail.isdigit() else _port(scope)


async def _owner_refusal(scope: dict, headers: dict[bytes, bytes]) -> tuple[str, str | None]:
    """(how the owner proved it, None) or ("", why not)."""
    via = await auth.scope_owner_via(scope)
    if not via:
        return "", "login"
    if via == "remote":
        return via, None  # remote_app.gate checked the origin and the paired device
    if headers.get(b"sec-fetch-site", b"none") not in (b"none", b"same-origin"):
        # Only a page of svc's own may mint grants; a preview's script (another origin) never.
        return "", "cross_site"
    origin_header = (headers.get(b"origin") or b"").decode("latin-1") or None
    if scope["type"] == "websocket" and not auth.origin_allowed(origin_header, _port(scope)):
        return "", "cross_site"
    return via, None


async def _live_preview(scope: dict, slug: str) -> tuple[Preview | None, str | None]:
    preview = await sync_to_async(selectors.port_preview_get)(slug)
    if preview is None:
        return None, "not_found"
    if services.port_refusal(preview.port, _port(scope)):
        return None, "refused_port"
    return preview, None


async def owner_entry(
    scope: dict, receive: Callable, send: Callable, slug: str, rest: str | None
) -> None:
    headers = dict(scope.get("headers") or [])
    via, refusal = await _owner_refusal(scope, headers)
    preview, refusal = (None, refusal) if refusal else await _live_preview(scope, slug)
    if preview is None:
        await _refuse(scope, send, refusal or "not_found", headers)
        return
    target = _path_target(scope, preview.port, f"/preview/u/{slug}")
    if target is None:
        await _refuse(scope, send, "not_found", headers)
    elif scope["type"] == "websocket":
        query = target.query.decode("latin-1")
        path = target.path.decode("latin-1") + ("?" + query if query else "")
        await wsproxy.forward_ws(scope, receive, send, preview.port, path)
    elif via == "header":
        await proxy.forward(scope, receive, send, target, parts.of(scope).previews)
    elif via == "remote":
        # Through a tunnel there is one host name, so no preview origin of its own: the page is
        # served in place, whole (not sandboxed), and what keeps it from the paired session is
        # the page key only svc's dashboard holds (docs/remote.md).
        target.sandboxed = not fetch_metadata(scope)
        await proxy.forward(scope, receive, send, target, parts.of(scope).previews)
    elif scope["method"] in _READ_METHODS:
        await _send_to_origin(scope, send, slug, rest or "/", headers)
    else:
        await _refuse(scope, send, "method", headers)


async def _send_to_origin(
    scope: dict, send: Callable, slug: str, rest: str, headers: dict[bytes, bytes]
) -> None:
    """303 to the preview's own origin with a one-time grant; `next` keeps path and query."""
    query = _query_without_token(scope)
    following = quote(rest, safe="/%:@!$&'()*+,;=-._~") + (f"?{query}" if query else "")
    grant = grants.grant_issue(parts.of(scope).preview_grants, slug)
    location = origin.origin_url(slug, _browser_port(headers, scope)) + origin.GRANT_PATH
    await pages.send_redirect(send, location + "?" + urlencode({"g": grant, "next": following}))
