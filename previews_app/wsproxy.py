"""The WebSocket half of the preview proxy (Vite/webpack hot reload and the app's own sockets).

Same rules as HTTP: loopback on the preview's port only, svc's cookies and Authorization removed,
never through an environment proxy. Refusal happens before accept, so the browser sees a failed
handshake rather than a socket that opens and dies.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import websockets
from websockets.asyncio.client import ClientConnection, connect

from previews_app.proxy import LOOPBACK, strip_svc_cookies

_PASS = (b"user-agent", b"accept-language")


def _headers(scope: dict) -> list[tuple[str, str]]:
    out = []
    for key, value in scope.get("headers") or []:
        if key == b"cookie":
            kept = strip_svc_cookies(value.decode("latin-1"))
            if kept:
                out.append(("Cookie", kept))
        elif key in _PASS:
            out.append((key.decode(), value.decode("latin-1")))
    return out


async def _open_upstream(scope: dict, port: int, path: str) -> ClientConnection | None:
    for host in LOOPBACK:
        netloc = f"[{host}]" if ":" in host else host
        try:
            return await connect(
                f"ws://{netloc}:{port}{path}",
                origin=f"http://localhost:{port}",  # type: ignore[arg-type]
                subprotocols=scope.get("subprotocols") or None,
                additional_headers=_headers(scope),
                user_agent_header=None,
                compression=None,
                proxy=None,
                open_timeout=5,
                max_size=None,
                ping_interval=None,
            )
        except (OSError, TimeoutError, websockets.InvalidHandshake):
            continue
    return None


async def forward_ws(scope: dict, receive: Callable, send: Callable, port: int, path: str) -> None:
    """Accept only once the upstream accepted, with the subprotocol it chose."""
    first = await receive()
    if first["type"] != "websocket.connect":
        return
    if not path.startswith("/"):  # anything else would let the path name another authority
        await send({"type": "websocket.close", "code": 4404})
        return
    upstream = await _open_upstream(scope, port, path)
    if upstream is None:
        await send({"type": "websocket.close", "code": 1011})
        return
    await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol})
    try:
        await _pump(upstream, receive, send)
    finally:
        await upstream.close()


async def _pump(upstream: ClientConnection, receive: Callable, send: Callable) -> None:
    async def browser_to_upstream() -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("bytes") is not None:
                await upstream.send(message["bytes"])
            elif message.get("text") is not None:
                await upstream.send(message["text"])

    async def upstream_to_browser() -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for data in upstream:
                key = "bytes" if isinstance(data, bytes) else "text"
                await send({"type": "websocket.send", key: data})
        code = upstream.close_code or 1000
        await send(
            {"type": "websocket.close", "code": 1000 if code in (1005, 1006, 1015) else code}
        )

    tasks = [
        asyncio.ensure_future(browser_to_upstream()),
        asyncio.ensure_future(upstream_to_browser()),
    ]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
