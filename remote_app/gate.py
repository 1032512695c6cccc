"""The remote listener's gate (contract §13): every request that arrived on the remote socket
passes here first, before the preview router, the bridge, /mcp or Django.

The socket, not the request, says "remote": the ASGI scope's `server` port is the one the
connection was accepted on (the loopback socket's, or one its LAN socket was bound on:
remote_app.lan). No token is honoured here (the Authorization header and `?token=`
are dropped); a paired browser is known by its `svc_remote` cookie alone, and its API calls and
WebSockets must also carry the dashboard page's key (docs/remote.md says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, cast
from urllib.parse import parse_qsl, urlencode, urlsplit

from channels.db import database_sync_to_async

from core.asgi_helpers import cookie, header, own_origin, parts_in, send_under
from core.devices import describe_device
from core.runtime import Reach
from remote_app import pairing, seals
from remote_app.models import PairedDevice
from remote_app.routes import (
    MAIN_PORT_ONLY,
    PAGE_KEY_HEADER,
    PAGE_KEY_PROTOCOL,
    REMOTE_COOKIE,
    remote_write_allowed,
    route_of,
)

_UNSAFE = ("POST", "PUT", "PATCH", "DELETE")


def is_remote(scope: dict) -> bool:
    """The loopback socket's port, or one the LAN socket (remote_app.lan) was bound on, as the
    daemon's parts in the scope know them (core.runtime.Reach)."""
    reach = cast(GateParts, parts_in(scope)).reach
    return reach.is_remote_port((scope.get("server") or (None, None))[1])


def without_tokens(scope: dict) -> dict:
    """The scope with every way of presenting a token removed: none counts here."""
    scope = dict(scope)
    scope["headers"] = [(k, v) for k, v in scope.get("headers") or [] if k != b"authorization"]
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    scope["query_string"] = urlencode([(k, v) for k, v in query if k != "token"]).encode()
    scope["svc_remote"] = True
    return scope


async def _no_share(scope: dict) -> bool:
    return False


class RemoteGate:
    """`is_share_read(scope)` says whether a root-relative read was made by a shared page (the
    previews app knows; the composition root hands it over, svcproject/asgi.py)."""

    def __init__(
        self, app: Callable, is_share_read: Callable[[dict], Awaitable[bool]] = _no_share
    ) -> None:
        self.app = app
        self.is_share_read = is_share_read

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] not in ("http", "websocket") or not is_remote(scope):
            await self.app(scope, receive, send)
            return
        scope = without_tokens(scope)
        route = route_of(scope["path"])
        if route == "refused":
            await refuse(scope, send, 404, "not_found", "not served on svc's remote listener")
            return
        if route == "open":
            await self.app(scope, receive, send)
            return
        found = cookie(scope, REMOTE_COOKIE)
        device = await database_sync_to_async(pairing.device_for_cookie)(found)
        if device is not None:
            scope["svc_device"], scope["svc_page_key"] = device.id, device.page_key
            # How the device is named where it acted (an approval's `who`): fixed words only.
            scope["svc_device_name"] = describe_device(device.device)
        if route in ("dashboard", "pairing"):  # the pairing page asks whether it is paired
            await self.app(scope, receive, send)  # the dashboard, or the pairing page
        elif route == "paired":
            await self.paired(scope, receive, send, device)
        elif await self.is_share_read(scope):
            await self.app(scope, receive, send)
        elif device is not None and (preview := _owner_preview_referrer(scope)):
            await send_under(scope, send, f"/preview/u/{preview}")
        else:
            await refuse(scope, send, 404, "not_found", "not served on svc's remote listener")

    async def paired(self, scope: dict, receive: Callable, send: Callable, device: Any) -> None:
        if device is None:
            await refuse(scope, send, 401, "not_paired", "pair this browser first: open / here")
            return
        origin = header(scope, b"origin")
        is_ws = scope["type"] == "websocket"
        if (origin and not own_origin(scope, origin)) or (is_ws and origin == "null"):
            await refuse(scope, send, 403, "cross_origin", "not from svc's own page")
            return
        if scope["path"].startswith(("/api/", "/ws")):
            key = _page_key(scope)
            if not pairing.page_key_matches(device, key):
                await refuse(
                    scope, send, 403, "page_key", "only svc's dashboard page may call this"
                )
                return
        if not is_ws and not remote_write_allowed(scope["method"], scope["path"]):
            await refuse(scope, send, 403, "main_port_only", MAIN_PORT_ONLY)
            return
        if is_ws:
            await self.watched_socket(scope, receive, send, device.id)
        else:
            await self.app(scope, receive, send)

    async def watched_socket(self, scope: dict, receive: Callable, send: Callable, device: str):
        """A remote WebSocket that closes (4401) the moment its device is revoked or the tokens
        rotate, whatever the consumer is doing."""
        protocol = next(
            (p for p in scope.get("subprotocols") or [] if p.startswith(PAGE_KEY_PROTOCOL)), None
        )
        scope["subprotocols"] = [p for p in scope.get("subprotocols") or [] if p != protocol]
        ended = asyncio.Event()
        sockets = cast(GateParts, parts_in(scope)).remote_sockets
        sockets.add(device, ended)

        async def send_accepting(message: dict) -> None:
            if (
                message["type"] == "websocket.accept"
                and protocol
                and not message.get("subprotocol")
            ):
                message = {**message, "subprotocol": protocol}  # the browser requires the echo
            await send(message)

        async def receive_until_ended() -> dict:
            if ended.is_set():
                return {"type": "websocket.disconnect", "code": 4401}
            incoming = asyncio.ensure_future(receive())
            revoked = asyncio.ensure_future(ended.wait())
            done, _ = await asyncio.wait({incoming, revoked}, return_when=asyncio.FIRST_COMPLETED)
            if incoming in done:
                revoked.cancel()
                return incoming.result()
            incoming.cancel()
            with contextlib.suppress(Exception):
                await send({"type": "websocket.close", "code": 4401})
            return {"type": "websocket.disconnect", "code": 4401}

        try:
            await self.app(scope, receive_until_ended, send_accepting)
        finally:
            sockets.discard(device, ended)


def _page_key(scope: dict) -> str:
    if scope["type"] == "websocket":
        for protocol in scope.get("subprotocols") or []:
            if protocol.startswith(PAGE_KEY_PROTOCOL):
                return protocol[len(PAGE_KEY_PROTOCOL) :]
        return ""
    return header(scope, PAGE_KEY_HEADER)


_OWNER_PREVIEW = re.compile(r"^/preview/u/(?P<slug>[^/]+)/")


def _owner_preview_referrer(scope: dict) -> str | None:
    """A paired browser's root-relative read (`/src/main.js`) made by an owner preview's page:
    its same-origin Referer names the preview, as for shares (previews_app/shares.py)."""
    if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
        return None
    referer = urlsplit(header(scope, b"referer"))
    if referer.netloc.lower() != header(scope, b"host").lower():
        return None
    found = _OWNER_PREVIEW.match(referer.path)
    return found["slug"] if found else None


async def refuse(scope: dict, send: Callable, status: int, code: str, message: str) -> None:
    if scope["type"] == "websocket":
        if status == 401:  # accepted, then closed: browsers see the code (contract §7)
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": 4401})
        else:
            await send({"type": "websocket.close", "code": 4000 + status})
        return
    body = json.dumps({"error": {"status": status, "code": code, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RemoteSockets:
    """The open remote WebSockets by device, so a revoke or a token rotation closes them now."""

    def __init__(self) -> None:
        self._open: dict[str, set[asyncio.Event]] = {}

    def add(self, device: str, ended: asyncio.Event) -> None:
        self._open.setdefault(device, set()).add(ended)

    def discard(self, device: str, ended: asyncio.Event) -> None:
        self._open.get(device, set()).discard(ended)
        if not self._open.get(device):
            self._open.pop(device, None)

    def end(self, device: str) -> int:
        ended = self._open.pop(device, set())
        for event in ended:
            event.set()
        return len(ended)

    async def sweep(self) -> int:
        """End the sockets of every device that is no longer paired (revoked elsewhere, rotated)."""
        if not self._open:
            return 0
        alive = await database_sync_to_async(_still_paired)(list(self._open))
        return sum(self.end(device) for device in list(self._open) if device not in alive)


class GateParts(Protocol):
    """What the gate reads of the daemon's parts in the scope (svcproject.parts)."""

    @property
    def remote_sockets(self) -> RemoteSockets: ...
    @property
    def reach(self) -> Reach: ...


def _still_paired(ids: list[str]) -> set[str]:
    fingerprint = pairing.token_fingerprint()
    rows = PairedDevice.objects.filter(pk__in=ids)
    return {
        d.pk
        for d in rows
        if hmac.compare_digest(d.token_fingerprint, fingerprint) and seals.device_sealed(d)
    }
