"""A live preview on its own origin, `{slug}.localhost:{svc port}` (contract §8).

The previewed page is untrusted code. On its own origin its root-relative URLs (`/app.js`,
`/api/…`, `/ws/…`) all reach the dev server, and svc's cookies — host-only on 127.0.0.1 or
localhost — are never sent to it, so its scripts cannot act as the owner against svc.
Chromium (and curl, and systemd's resolver) resolve every `*.localhost` name to loopback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import parse_qs, quote

from asgiref.sync import sync_to_async

from core import auth, browser
from core.asgi_helpers import cookie_in
from previews_app import grants, pages, parts, proxy, selectors, services, wsproxy
from previews_app.models import Preview

GRANT_PATH = "/__svc_preview/grant"
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


def origin_slug(host: str | None) -> str | None:
    """The slug when Host is `{label}.localhost[:port]`. Any other `*.localhost` name yields ""
    so svc's own pages are never served on a preview-looking origin."""
    if not host:
        return None
    name = host.lower().rsplit(":", 1)[0] if not host.endswith("]") else host.lower()
    name = name.removesuffix(".")  # `x.localhost.` is the same name, spelled fully qualified
    if not name.endswith(".localhost") or name == browser.browser_host():
        return None  # the dashboard's own host name is reserved: never a preview
    label = name[: -len(".localhost")]
    return label if _LABEL.match(label) else ""


def origin_url(slug: str, port: int) -> str:
    return f"http://{slug}.localhost:{port}"


def _cookie(headers: dict[bytes, bytes]) -> str:
    return cookie_in(headers.get(b"cookie", b"").decode("latin-1"), grants.COOKIE_NAME)


def _is_owner(headers: dict[bytes, bytes], slug: str) -> bool:
    if grants.cookie_opens(_cookie(headers), slug):
        return True
    # Non-browser clients may present the owner token as a header; never as ?token= here.
    token = auth.bearer(headers.get(b"authorization", b"").decode("latin-1"))
    return auth.token_kind(token) == "owner"


def _safe_next(values: list[str]) -> str:
    target = values[0] if values else "/"
    # Browsers read `/\host` as `//host`: only a plain path on this origin may follow a grant.
    plain = target.startswith("/") and not target.startswith("//") and "\\" not in target
    return quote(target, safe="/?&=%:@!$'()*+,;~-._#") if plain and target.isprintable() else "/"


async def _redeem(scope: dict, send: Callable, slug: str, headers: dict[bytes, bytes]) -> None:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    store = parts.of(scope).preview_grants
    if not grants.grant_redeem(store, (query.get("g") or [""])[0], slug):
        await pages.send_page(send, "grant", headers)
        return
    cookie = grants.set_cookie_header(slug)
    await pages.send_redirect(send, _safe_next(query.get("next", [])), cookies=[cookie])


async def _usable(
    scope: dict, slug: str, headers: dict[bytes, bytes]
) -> tuple[Preview | None, str]:
    """(preview, "") or (None, why not). The owner check comes first, so strangers cannot tell
    which slugs exist."""
    if not _is_owner(headers, slug):
        return None, "login"
    preview = await sync_to_async(selectors.port_preview_get)(slug) if slug else None
    if preview is None:
        return None, "not_found"
    if services.port_refusal(preview.port, (scope.get("server") or (0, 0))[1]):
        return None, "refused_port"
    return preview, ""


async def serve(scope: dict, receive: Callable, send: Callable, slug: str) -> None:
    headers = dict(scope.get("headers") or [])
    is_ws = scope["type"] == "websocket"
    host = headers.get(b"host", b"").decode("latin-1").lower()
    if is_ws and headers.get(b"origin") not in (None, f"http://{host}".encode("latin-1")):
        await send({"type": "websocket.close", "code": 4403})  # before accept: HTTP 403
        return
    if not is_ws and scope["path"] == GRANT_PATH:
        await _redeem(scope, send, slug, headers)
        return
    preview, refusal = await _usable(scope, slug, headers)
    if preview is None:
        await _refuse(scope, send, refusal, headers)
        return
    raw_path = scope.get("raw_path") or scope["path"].encode()
    query = scope.get("query_string", b"")
    if is_ws:
        path = raw_path.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
        await wsproxy.forward_ws(scope, receive, send, preview.port, path)
        return
    target = proxy.Target(
        port=preview.port,
        path=raw_path,
        query=query,
        public_base=f"http://{host}",
        on_svc_origin=False,
    )
    await proxy.forward(scope, receive, send, target, parts.of(scope).previews)


async def _refuse(scope: dict, send: Callable, kind: str, headers: dict[bytes, bytes]) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 4403})
    else:
        await pages.send_page(send, kind, headers, head=scope["method"] == "HEAD")
