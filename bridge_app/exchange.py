"""The bridge service: one exchange with a provider, whole — prepare → send → translate →
remember. `views.py` parses ASGI and writes whatever `Reply` this module returns; it never talks to
a provider or to the response store itself.

Every refusal is an `ir.BridgeError` (a DomainError with a status), encoded in the client's own
dialect by the view.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from bridge_app import dialects, ir, response_store, translate, upstream, usage
from bridge_app.routes import Route
from bridge_app.streams import StreamTranslator

logger = logging.getLogger(__name__)
KEPT_HEADERS = ("x-request-id", "request-id", "x-ratelimit-", "anthropic-ratelimit-", "retry-after")


@dataclass(frozen=True)
class Parts:
    """What an exchange uses of the running daemon: its pooled client to providers and the
    Responses turns svc translated (so a `previous_response_id` can be continued)."""

    client: upstream.UpstreamClient
    responses: response_store.ResponseStore


@dataclass
class Reply:
    """A whole JSON answer (`body`), or a stream (`chunks`) with its content type."""

    status: int = 200
    body: Any = None  # a JSON-able object, or bytes already encoded
    headers: dict[str, str] = field(default_factory=dict)
    chunks: AsyncGenerator[bytes] | None = None
    content_type: str = "application/json"


def _provider_headers(headers: dict[str, str]) -> dict[str, str]:
    """The provider's request id and rate-limit headers: what a user debugging a call needs."""
    return {k: v for k, v in headers.items() if k.startswith(KEPT_HEADERS)}


# --- what needs no provider --------------------------------------------------------------------


def models(route: Route) -> Reply:
    codec = dialects.get(route.dialect)
    profile = translate.find_profile(route)
    if route.operation == "models":
        return Reply(body=codec.encode_model_list(profile.client_model_ids()))
    model = route.model.removeprefix("models/")
    translate.resolve_model(profile, model)  # the same rule as a request: 404 if not served
    return Reply(body=codec.encode_model(model))


def stored_response(parts: Parts, route: Route, method: str) -> Reply:
    """GET / DELETE of a Responses turn svc translated (and so remembers)."""
    translate.find_profile(route)
    if method not in ("GET", "DELETE"):
        raise ir.BridgeError(405, f"{method} is not allowed here")
    stored = parts.responses.recall(route.model)
    if stored is None:
        raise ir.BridgeError(404, f"Response with id {route.model!r} not found.")
    if method == "GET":
        return Reply(body=stored.response)
    parts.responses.forget(route.model)
    return Reply(body={"id": route.model, "object": "response.deleted", "deleted": True})


async def count_tokens(parts: Parts, route: Route, body: dict[str, Any]) -> Reply:
    """The provider's exact count when it speaks the client's dialect; a local estimate when it
    does not, or when its count endpoint fails (a gauge must not fail)."""
    request = translate.count_request(route, body)
    if request is not None:
        try:
            resp = await upstream.send(parts.client, *request)
            try:
                raw = await upstream.read_body(resp)
            finally:
                await resp.close()
            if resp.status == 200:
                return Reply(body=raw)
        except ir.BridgeError:
            pass
    return Reply(body=translate.count_tokens(route, body))


# --- a model call ------------------------------------------------------------------------------


class Incoming:
    """The client's request, handed over once: after `take()` nobody holds the parsed body or
    its text but the exchange, which lets go of both as soon as the upstream body is made —
    a 64 MiB request peaks at two copies, never three."""

    def __init__(self, body: dict[str, Any], text: str) -> None:
        self._parts: tuple[dict[str, Any], str] | None = (body, text)

    def take(self) -> tuple[dict[str, Any], str]:
        parts, self._parts = self._parts, None
        assert parts is not None, "a request is exchanged once"
        return parts


async def generate(
    parts: Parts, route: Route, incoming: Incoming, log: dict[str, Any] | None = None
) -> Reply:
    """Send the client's request to the profile's provider and answer in the client's dialect.
    For a stream the reply's chunks hold the provider connection: closing them ends it. `log`
    gets what the request log records (provider, model, stream)."""
    body, text = incoming.take()
    out = translate.prepare(route, body, text, recall=lambda rid: _recall(parts, rid))
    del text, body
    log = log if log is not None else {}
    log.update(
        provider=out.provider.NAME,
        model=out.requested[:200],
        stream=out.stream,
        upstream_model=out.upstream_model[:200],
    )
    await _inline_remote_images(out)
    resp = await upstream.send(parts.client, out.url, out.headers, out.take_body())
    try:
        if resp.status >= 400:
            raw = await upstream.read_body(resp)
            error = translate.error_body(out, resp.status, raw)
            return Reply(resp.status, error, _provider_headers(resp.headers))
        extra = _provider_headers(resp.headers)
        if out.warnings:
            extra["x-svc-warning"] = "; ".join(out.warnings)
        if not out.stream:
            return Reply(200, _whole(parts, out, await upstream.read_body(resp), log), extra)
    except BaseException:
        await resp.close()
        raise
    ctype = "text/event-stream" if out.sse else "application/json"
    return Reply(200, None, extra, _relay(parts, out, resp, log), ctype)


def _recall(parts: Parts, response_id: str) -> list[ir.Message] | None:
    stored = parts.responses.recall(response_id)
    return stored.messages if stored is not None else None


def _whole(parts: Parts, out: translate.Outbound, raw: bytes, log: dict[str, Any]) -> bytes:
    encoded, resp, data = translate.response_body(out, raw)
    meter = usage.Meter(out.provider.NAME)
    if resp is not None:
        meter.usage = resp.usage
    elif data is not None:  # passthrough, model rewritten: the provider's own dialect
        meter.whole(data)
    else:
        meter.whole_bytes(raw)
    log.update(meter.fields())
    if out.history is not None and resp is not None:
        answer = ir.Message("assistant", resp.parts)
        parts.responses.remember(data["id"], [*out.history, answer], data)
    return encoded


async def _relay(
    parts: Parts, out: translate.Outbound, resp: upstream.Response, log: dict[str, Any]
) -> AsyncGenerator[bytes]:
    """Each provider chunk translated as it comes; failures after the 200 become the client
    dialect's error event; a finished Responses turn is remembered; the usage the provider
    reported (so far, if the client left) goes to `log`."""
    translator = StreamTranslator(out)
    try:
        # Some OpenAI-compatible servers ignore `stream` and answer one JSON body: replayed as
        # the client's events whichever way the dialects pair, passthrough included.
        if resp.headers.get("content-type", "").startswith("application/json"):
            yield translator.whole(await upstream.read_body(resp))
            tail = b""
        else:
            async for chunk in upstream.chunks(resp):
                if data := translator.feed(chunk):
                    yield data
            tail = translator.close()
    except ir.BridgeError as exc:
        tail = translator.fail(exc.status, exc.message)
    except Exception as exc:  # a translation bug must still end the client's stream cleanly
        logger.exception("bridge stream translation failed")
        tail = translator.fail(502, f"svc could not translate the provider's stream: {exc}")
    finally:
        log.update(translator.meter.fields())
        await resp.close()
    if (remembered := translator.remembered()) is not None:
        final, answer = remembered
        parts.responses.remember(final["id"], [*(out.history or []), answer], final)
    yield tail


async def _inline_remote_images(out: translate.Outbound) -> None:
    """Gemini reads images by URL only from Google's own file store: fetch http(s) images and
    send them inline. One that cannot be fetched stays a URL, with a warning."""
    if out.provider.NAME != "gemini" or not isinstance(out.payload, ir.Request):
        return
    for msg in out.payload.messages:
        for part in msg.parts:
            images = part.content if isinstance(part, ir.ToolResult) else [part]
            for image in images:
                if isinstance(image, ir.Image) and image.url.startswith(("http://", "https://")):
                    await _inline(image, out.warnings)


async def _inline(image: ir.Image, warnings: list[str]) -> None:
    try:
        data, media_type = await upstream.fetch_image(image.url)
    except ir.BridgeError as exc:
        warnings.append(f"image {image.url} sent as a URL: {exc.message}")
        return
    image.data, image.media_type, image.url = base64.b64encode(data).decode(), media_type, ""
