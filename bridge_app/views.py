"""The bridge's HTTP surface: a raw ASGI app mounted ahead of Django in svcproject/asgi.py.

Raw ASGI rather than Django views because the hot path needs what Django's handler cannot give:
the Content-Length check before the body is read (413), racing the relay against
`http.disconnect` so a client that leaves cancels the provider request at once, and flushing
each translated SSE event as it is produced. It only parses, calls proxy, and writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bridge_app import (
    bodies,
    dialects,
    gate,
    ir,
    proxy,
    requestlog,
    response_store,
    routing,
    upstream,
)
from bridge_app.dialects.common import dumps

logger = logging.getLogger(__name__)
MAX_BODY = 64 * 1024 * 1024  # SPEC §11
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class ClientGone(Exception):
    """The client disconnected before its request body arrived."""


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key == name:
            return value.decode("latin-1")
    return None


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
        body = json.loads(text)
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


KEPT_HEADERS = ("x-request-id", "request-id", "x-ratelimit-", "anthropic-ratelimit-", "retry-after")


def provider_headers(headers: dict[str, str]) -> dict[str, str]:
    """The provider's request id and rate-limit headers: what a user debugging a call needs."""
    return {k: v for k, v in headers.items() if k.startswith(KEPT_HEADERS)}


class BridgeApp:
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = routing.parse(scope["path"], scope.get("query_string", b""))
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
            requestlog.record(
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
        route: routing.Route | None,
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
            if reason := gate.refusal(scope):
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
        self, route: routing.Route, scope: Scope, receive: Receive, send: Send, info: dict[str, Any]
    ) -> None:
        codec = dialects.get(route.dialect)
        if route.family == "local-agent":
            raise ir.BridgeError(
                503, "the agent-as-API (/svc/local-agent) is not enabled in this build"
            )
        if route.operation in ("models", "model") and scope["method"] in ("GET", "HEAD"):
            return await send_json(send, 200, self._models(route, codec))
        if route.operation == "response":
            return await send_json(send, 200, self._stored_response(route, scope["method"]))
        if route.operation == "unknown":
            raise ir.BridgeError(404, f"no bridge operation at {scope['path']!r}")
        if scope["method"] != "POST":
            raise ir.BridgeError(405, f"{scope['method']} is not allowed here; use POST")
        check_content_type(scope)
        # Memory for a 64 MiB request: bytes → str (the bytes freed), str → objects (parsing a
        # str needs no second decoded copy), then only what is relayed stays alive: two copies
        # at the peak, never three.
        text = decode_text(await read_body(scope, receive))
        body = parse_json(text)
        if route.operation == "count_tokens":
            counted = await self._count_upstream(route, body)
            return await send_json(send, 200, counted or proxy.count_tokens(route, body))
        out = proxy.prepare(route, body, text)
        del text, body
        info.update(provider=out.provider.NAME, model=out.requested[:200], stream=out.stream)
        await run_watched(self._forward(out, send), receive)

    def _models(self, route: routing.Route, codec: Any) -> dict[str, Any]:
        profile = proxy.find_profile(route)
        if route.operation == "models":
            return codec.encode_model_list(profile.client_model_ids())
        model = route.model.removeprefix("models/")
        proxy.resolve_model(profile, model)  # the same rule as a request: 404 if not served
        return codec.encode_model(model)

    async def _count_upstream(self, route: routing.Route, body: dict[str, Any]) -> Any:
        """The provider's exact count when it speaks the client's dialect; None (so: the local
        estimate) when it does not, or when its count endpoint fails: a gauge must not fail."""
        request = proxy.count_request(route, body)
        if request is None:
            return None
        try:
            resp = await upstream.send(*request)
            try:
                raw = await upstream.read_body(resp)
            finally:
                await resp.close()
        except ir.BridgeError:
            return None
        return raw if resp.status == 200 else None

    def _stored_response(self, route: routing.Route, method: str) -> dict[str, Any]:
        """GET / DELETE of a Responses turn svc translated (and so remembers)."""
        proxy.find_profile(route)
        if method not in ("GET", "DELETE"):
            raise ir.BridgeError(405, f"{method} is not allowed here")
        stored = response_store.recall(route.model)
        if stored is None:
            raise ir.BridgeError(404, f"Response with id {route.model!r} not found.")
        if method == "GET":
            return stored.response
        response_store.forget(route.model)
        return {"id": route.model, "object": "response.deleted", "deleted": True}

    async def _forward(self, out: proxy.Outbound, send: Send) -> None:
        await proxy.inline_remote_images(out)
        resp = await upstream.send(out.url, out.headers, out.take_body())
        try:
            if resp.status >= 400:
                raw = await upstream.read_body(resp)
                body = proxy.error_body(out, resp.status, raw)
                return await send_json(send, resp.status, body, provider_headers(resp.headers))
            extra = provider_headers(resp.headers)
            if out.warnings:
                extra["x-svc-warning"] = "; ".join(out.warnings)
            if not out.stream:
                body = proxy.response_body(out, await upstream.read_body(resp))
                return await send_json(send, 200, body, extra)
            await self._relay(out, resp, send, extra)
        finally:
            await resp.close()

    async def _relay(
        self, out: proxy.Outbound, resp: upstream.Response, send: Send, extra: dict[str, str]
    ) -> None:
        ctype = b"application/json" if not out.sse else b"text/event-stream"
        head = [
            (b"content-type", ctype),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        head += [(k.encode(), v.encode("latin-1", "replace")) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        translator = proxy.StreamTranslator(out)
        try:
            if not out.passthrough and resp.headers.get("content-type", "").startswith(
                "application/json"
            ):
                body = translator.whole(await upstream.read_body(resp))
                return await send({"type": "http.response.body", "body": body, "more_body": False})
            async for chunk in upstream.chunks(resp):
                if data := translator.feed(chunk):
                    await send({"type": "http.response.body", "body": data, "more_body": True})
            tail = translator.close()
        except ir.BridgeError as exc:
            tail = translator.fail(exc.status, exc.message)
        except Exception as exc:  # a translation bug must still end the client's stream cleanly
            logger.exception("bridge stream translation failed")
            tail = translator.fail(502, f"svc could not translate the provider's stream: {exc}")
        await send({"type": "http.response.body", "body": tail, "more_body": False})


application = BridgeApp()
