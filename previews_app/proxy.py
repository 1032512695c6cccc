"""The HTTP half of the preview reverse proxy.

It only ever connects to 127.0.0.1 or ::1 on the preview's port, never follows redirects, never
forwards the owner's credentials, streams both bodies, and cancels the upstream request as soon as
the browser goes away (a relay that only notices on its next write keeps a dev server streaming
into the void).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import httpx

from previews_app import pages

LOOPBACK = ("127.0.0.1", "::1")
# Cookies svc itself sets: the owner's login and the preview-origin grant. Nothing else on a
# preview origin belongs to svc, so the dev app keeps its own cookies.
SVC_COOKIES = frozenset({"svc_token", "svc_preview", "svc_session", "svc_csrftoken", "svc_remote"})
_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
_DROP_REQUEST = _HOP_BY_HOP | {
    b"host",
    b"authorization",
    b"cookie",
    b"origin",
    b"referer",
    b"expect",
}
# What a path-mounted (svc-origin) response may not do to svc's own origin. Through a tunnel a
# previewed page is same-origin with the remote dashboard, which holds the page key: the two must
# never share a browsing-context group. The dashboard sends COOP `same-origin`; a page allowed to
# send the same value would be grouped with it when it calls `window.open('/')` and could read its
# DOM (docs/remote.md). So no isolation header of the page's own reaches the browser there (COOP,
# COEP and their report-only forms, Document-Isolation-Policy, Origin-Agent-Cluster), nor a
# worker scope wider than its own folder, a cookie, a wipe of svc's storage, or a prerender rule.
_DROP_ON_SVC_ORIGIN = frozenset(
    {
        b"set-cookie",
        b"clear-site-data",
        b"service-worker-allowed",
        b"cross-origin-opener-policy",
        b"cross-origin-opener-policy-report-only",
        b"cross-origin-embedder-policy",
        b"cross-origin-embedder-policy-report-only",
        b"document-isolation-policy",
        b"origin-agent-cluster",
        b"speculation-rules",
    }
)
SANDBOX_CSP = b"sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"


@dataclass
class Target:
    """Where a request goes and how the answer is shaped for the browser."""

    port: int
    path: bytes  # path on the upstream, starting with /
    query: bytes
    public_base: str  # what upstream-absolute Locations are rewritten to (origin or path prefix)
    on_svc_origin: bool  # shares (and header-auth owner requests) live on svc's own origin
    seconds_left: float | None = None  # a share's remaining life: long streams end with it
    # Shares render as the owner sees them: no sandbox (it would break storage, module scripts
    # and more) — on svc's origin a page holds no credential of svc's (core.browser).
    sandboxed: bool = True


class PreviewClient:
    """The runtime's pooled client to previewed dev servers (made on first use in the running
    loop, closed when the runtime stops), and which loopback address each port answered on."""

    def __init__(self) -> None:
        self._client: httpx.AsyncClient | None = None
        self.preferred_host: dict[int, str] = {}

    def get(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                follow_redirects=False,
                trust_env=False,  # never through HTTP_PROXY: the target is loopback, always
                timeout=httpx.Timeout(connect=5.0, read=None, write=None, pool=30.0),
                limits=httpx.Limits(max_connections=200, max_keepalive_connections=20),
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def strip_svc_cookies(value: str) -> str:
    """The Cookie header minus svc's own cookies; the previewed app keeps its own."""
    kept = []
    for part in value.split(";"):
        name = part.split("=", 1)[0].strip()
        if name and name not in SVC_COOKIES:
            kept.append(part.strip())
    return "; ".join(kept)


def upstream_headers(raw: list[tuple[bytes, bytes]], target: Target) -> list:
    out: list[tuple[bytes, bytes]] = []
    for key, value in raw:
        if key in _DROP_REQUEST or key.startswith(b"x-forwarded") or key == b"forwarded":
            if key == b"cookie" and not target.on_svc_origin:
                kept = strip_svc_cookies(value.decode("latin-1"))
                if kept:
                    out.append((b"cookie", kept.encode("latin-1")))
            elif key in (b"origin", b"referer"):
                out.append((key, _to_upstream(value, target)))
            continue
        out.append((key, value))
    out.append((b"host", f"localhost:{target.port}".encode()))
    return out


def _to_upstream(value: bytes, target: Target) -> bytes:
    """Origin/Referer of the preview origin become the upstream's own, so same-origin checks in
    the previewed app (CSRF, Vite's WebSocket check) see what they would see without svc."""
    text = value.decode("latin-1")
    if text.startswith(target.public_base):
        return (f"http://localhost:{target.port}" + text[len(target.public_base) :]).encode()
    return value


def rewrite_location(value: str, target: Target) -> str:
    for host in ("localhost", "127.0.0.1", "[::1]"):
        prefix = f"http://{host}:{target.port}"
        if value == prefix or value.startswith(prefix + "/"):
            return target.public_base + (value[len(prefix) :] or "/")
    if target.on_svc_origin and value.startswith("/") and not value.startswith("//"):
        return target.public_base + value
    return value  # another host: handed to the browser as is, never followed


def response_headers(raw: list[tuple[bytes, bytes]], target: Target) -> list:
    out: list[tuple[bytes, bytes]] = []
    for name, value in raw:
        key = name.lower()  # httpx keeps the upstream's spelling
        if key in _HOP_BY_HOP:
            continue
        if target.on_svc_origin and key in _DROP_ON_SVC_ORIGIN:
            continue
        if key == b"location":
            value = rewrite_location(value.decode("latin-1"), target).encode("latin-1")
        out.append((key, value))
    if target.on_svc_origin and target.sandboxed:
        # Opaque origin: the page's scripts run but cannot read its origin's storage.
        out.append((b"content-security-policy", SANDBOX_CSP))
        out.append((b"referrer-policy", b"no-referrer"))
        out.append((b"x-content-type-options", b"nosniff"))
    elif target.on_svc_origin:
        # The page's own requests must keep saying which share asked (previews_app/shares.py),
        # and never to another origin.
        out = [(k, v) for k, v in out if k != b"referrer-policy"]
        out.append((b"referrer-policy", b"same-origin"))
        out.append((b"x-content-type-options", b"nosniff"))
    return out


class ClientGone(Exception):
    """The browser disconnected while its request body was being forwarded."""


class RequestBody:
    """The browser's request body, pulled from ASGI as the upstream takes it (never buffered)."""

    def __init__(self, receive: Callable) -> None:
        self.receive = receive
        self.started = False
        self.disconnected = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self.started = True
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                raise ClientGone
            if message.get("body"):
                yield message["body"]
            if not message.get("more_body"):
                return


def _has_body(headers: dict[bytes, bytes]) -> bool:
    length = headers.get(b"content-length", b"0")
    return b"chunked" in headers.get(b"transfer-encoding", b"") or length.strip() not in (b"", b"0")


async def _open(
    scope: dict, body: RequestBody | None, target: Target, headers: list, previews: PreviewClient
) -> httpx.Response:
    """Send to loopback; the address that answered last time first. Node's `localhost` often
    means ::1 only, Python's http.server 0.0.0.0: both have to work."""
    hosts = sorted(LOOPBACK, key=lambda h: h != previews.preferred_host.get(target.port))
    last_error: Exception | None = None
    for host in hosts:
        url = httpx.URL(scheme="http", host=host, port=target.port, path="/").copy_with(
            raw_path=target.path + (b"?" + target.query if target.query else b"")
        )
        request = previews.get().build_request(
            scope["method"], url, headers=headers, content=body if body is not None else None
        )
        try:
            response = await previews.get().send(request, stream=True)
        except httpx.ConnectError as exc:
            last_error = exc
            if body is not None and body.started:
                break
            continue
        previews.preferred_host[target.port] = host
        return response
    raise last_error or httpx.ConnectError("no loopback address answered")


async def forward(
    scope: dict, receive: Callable, send: Callable, target: Target, previews: PreviewClient
) -> None:
    """Relay one request to the dev server through `previews` (the runtime's pooled client)."""
    raw_headers = list(scope.get("headers") or [])
    header_map = dict(raw_headers)
    body = RequestBody(receive) if _has_body(header_map) else None
    headers = upstream_headers(raw_headers, target)
    try:
        response = await _open(scope, body, target, headers, previews)
    except httpx.TransportError:  # refused, reset, or hung up before answering
        await pages.send_page(send, "unreachable", header_map, head=scope["method"] == "HEAD")
        return
    except httpx.InvalidURL:  # a request target that is not a path
        await pages.send_page(send, "not_found", header_map, head=scope["method"] == "HEAD")
        return
    except ClientGone:
        return
    try:
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": response_headers(response.headers.raw, target),
            }
        )
        await _relay_until_disconnect(response, receive, send, target.seconds_left)
    finally:
        await response.aclose()


async def _relay_until_disconnect(
    response: httpx.Response, receive: Callable, send: Callable, seconds_left: float | None
) -> None:
    """Relay until the body ends, the browser leaves, or (shares) the link's life runs out."""

    async def relay() -> None:
        with contextlib.suppress(httpx.ReadError, httpx.RemoteProtocolError):
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    async def expired() -> None:
        await asyncio.sleep(seconds_left or 0)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    tasks = [asyncio.ensure_future(relay()), asyncio.ensure_future(disconnected())]
    if seconds_left is not None:
        tasks.append(asyncio.ensure_future(expired()))
    try:
        done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
    for task in done:
        if task.exception() is not None and not isinstance(task.exception(), OSError):
            raise task.exception()  # type: ignore[misc]
