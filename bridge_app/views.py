"""The bridge's HTTP surface: a raw ASGI app mounted ahead of Django in svcproject/asgi.py. It only
parses ASGI and writes: the exchange itself (profile, provider, translation, memory) is
`exchange.py`.

Raw ASGI rather than Django views because the hot path needs what Django's handler cannot give:
racing the exchange against `http.disconnect` so a client that leaves cancels the provider request
at once, and flushing each translated SSE event as it is produced. (Limits and the loopback gate
are also judged on the headers before any body is read: svcproject/admission.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bridge_app import agent_api, bodies, dialects, exchange, gate, ir, parts, routes
from bridge_app.dialects.common import dumps
from core import untrusted_json
from core.asgi_helpers import header

logger = logging.getLogger(__name__)
MAX_BODY = 64 * 1024 * 1024  # contract §11
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class ClientGone(Exception):
    """The client disconnected before its request body arrived."""


def _header(scope: dict, name: bytes) -> str | None:
    return header(scope, name) or None


async def send_json(
    send: Send, status: int, body: Any, headers: dict[str, str] | None = None
) -> None:
    raw = body if isinstance(body, bytes) else dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    head += [(k.encode(), v.encode("latin-1", "replace")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": raw})


async def read_body(scope: Scope, receive: Receive) -> bytearray:
    """One growing buffer (no list of chunks joined into a second copy), refused at 64 MiB."""
    length = _header(scope, b"content-length")
    if length and length.isdigit() and int(length) > MAX_BODY:
        raise ir.BridgeError(413, f"request body larger than {MAX_BODY} bytes")
    body = bytearray()
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise ClientGone
        body += msg.get("body", b"")
        if len(body) > MAX_BODY:
            raise ir.BridgeError(413, f"request body larger than {MAX_BODY} bytes")
        if not msg.get("more_body"):
            return body


def _libc_trim() -> Any:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


_malloc_trim = _libc_trim()


def release_freed_memory() -> None:
    """daphne hands a large body over in 8 KiB pieces that all exist before svc reads the first;
    once they are copied into one buffer and freed, glibc keeps their heap pages. Returning them
    before the body is decoded keeps a 64 MiB request at two copies at the peak instead of three."""
    if _malloc_trim is not None:
        _malloc_trim(0)


def check_content_type(scope: Scope) -> None:
    ctype = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise ir.BridgeError(415, "Content-Type must be application/json")


def decode_text(raw: bytearray) -> str:
    if len(raw) > bodies.LARGE:
        release_freed_memory()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ir.bad_request(f"the body is not UTF-8 JSON: {exc}") from exc


def parse_json(text: str) -> dict[str, Any]:
    try:
        body = untrusted_json.loads(text, max_bytes=MAX_BODY)
    except untrusted_json.UntrustedJSONError as exc:
        raise ir.bad_request(f"the body is refused: {exc}") from None
    except ValueError as exc:
        raise ir.bad_request(f"the body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ir.bad_request("the body must be a JSON object")
    return body


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def run_watched(work: Awaitable[None], receive: Receive) -> None:
    """Run `work`; if the client disconnects first, cancel it (and with it the provider call)."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_until_disconnect(receive))
    done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        watcher.cancel()
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, ir.BridgeError):
        await task


async def write(send: Send, reply: exchange.Reply) -> None:
    if reply.chunks is None:
        return await send_json(send, reply.status, reply.body, reply.headers)
    head = [
        (b"content-type", reply.content_type.encode()),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
    ]
    head += [(k.encode(), v.encode("latin-1", "replace")) for k, v in reply.headers.items()]
    await send({"type": "http.response.start", "status": reply.status, "headers": head})
    try:
        async for chunk in reply.chunks:
            if chunk:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
    finally:
        await reply.chunks.aclose()  # a cancelled relay lets go of the provider at once
    await send({"type": "http.response.body", "body": b"", "more_body": False})


class BridgeApp:
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = routes.parse(scope["path"], scope.get("query_string", b""))
        if route is None or route.operation != "generate":
            return await self._answer(route, scope, receive, send, {})
        started, status, info = time.perf_counter(), [0], {"model": route.model[:200]}

        async def send_logged(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self._answer(route, scope, receive, send_logged, info)
        finally:
            parts.of(scope).requestlog.record(
                route=route.family,
                profile_id=route.profile[:64],
                scope=route.scope,
                client_dialect=route.dialect,
                status=status[0],
                duration_ms=(time.perf_counter() - started) * 1000,
                **info,
            )

    async def _answer(
        self,
        route: routes.Route | None,
        scope: Scope,
        receive: Receive,
        send: Send,
        info: dict[str, Any],
    ) -> None:
        codec = dialects.get(route.dialect if route else "openai-chat")
        started = False

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            if reason := gate.refusal(scope) or gate.caller_refusal(scope, send):
                raise ir.BridgeError(403, reason)
            if route is None:
                raise ir.BridgeError(404, f"no bridge route {scope['path']!r}")
            await self._handle(route, scope, receive, tracked, info)
        except ir.BridgeError as exc:
            if not started:
                body = codec.encode_error(exc.status, exc.message)
                await send_json(send, exc.status, body, exc.headers)
        except ClientGone:
            return
        except Exception as exc:  # svc's own bug: still an answer in the client's dialect
            logger.exception("bridge request failed")
            if not started:
                body = codec.encode_error(500, f"svc could not handle this request: {exc}")
                await send_json(send, 500, body, {"x-should-retry": "false"})

    async def _handle(
        self, route: routes.Route, scope: Scope, receive: Receive, send: Send, info: dict[str, Any]
    ) -> None:
        method, handed = scope["method"], parts.of(scope)
        if route.family == "local-agent" and route.operation in ("models", "model"):
            anthropic = _header(scope, b"anthropic-version") is not None
            return await write(send, agent_api.models(route, anthropic))
        if route.operation in ("models", "model") and method in ("GET", "HEAD"):
            return await write(send, exchange.models(route))
        if route.operation == "response":
            return await write(send, exchange.stored_response(_exchange(handed), route, method))
        if route.operation == "unknown":
            raise ir.BridgeError(404, f"no bridge operation at {scope['path']!r}")
        if method != "POST":
            raise ir.BridgeError(405, f"{method} is not allowed here; use POST")
        check_content_type(scope)
        # Memory for a 64 MiB request: bytes → str (the bytes freed), str → objects (parsing a
        # str needs no second decoded copy), then only what is relayed stays alive: two copies
        # at the peak, never three.
        text = decode_text(await read_body(scope, receive))
        body = parse_json(text)
        if route.operation == "count_tokens" and route.family != "local-agent":
            return await write(send, await exchange.count_tokens(_exchange(handed), route, body))
        incoming = exchange.Incoming(body, text)
        del text, body
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        await run_watched(self._generate(handed, route, incoming, send, info, headers), receive)

    async def _generate(
        self,
        handed: parts.BridgeParts,
        route: routes.Route,
        incoming: exchange.Incoming,
        send: Send,
        info: dict[str, Any],
        headers: dict[str, str],
    ) -> None:
        if route.family == "local-agent":
            reply = await agent_api.generate(handed.conversations, route, incoming, headers, info)
        else:
            reply = await exchange.generate(_exchange(handed), route, incoming, info)
        await write(send, reply)


def _exchange(handed: parts.BridgeParts) -> exchange.Parts:
    return exchange.Parts(handed.upstream, handed.responses)


application = BridgeApp()
