"""One request through the bridge: pick the profile and model, translate the body for the
provider, and translate what comes back (whole, or event by event) for the client."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bridge_app import bodies, dialects, ir, response_store
from bridge_app.dialects.common import dumps
from bridge_app.routing import Route
from svcproject import config


@dataclass
class Outbound:
    client: ModuleType
    provider: ModuleType
    requested: str  # the model id the client asked for: every response names it
    upstream_model: str
    url: str
    headers: dict[str, str]
    payload: Any  # the client's JSON text forwarded as is, the JSON object, or the IR to encode
    stream: bool
    passthrough: bool
    include_usage: bool = True
    sse: bool = True
    warnings: list[str] = field(default_factory=list)
    history: list[ir.Message] | None = None  # set when svc must remember this Responses turn
    size_hint: int = 0  # the client's body size: large bodies are encoded piece by piece

    def take_body(self) -> bodies.JsonBody | bytes | bytearray:
        """What to send, encoded late and handed over once (see bodies.py for large ones)."""
        payload, self.payload = self.payload, None
        if isinstance(payload, ir.Request):
            payload = self.provider.encode_request(payload)
        return bodies.upstream_body(payload, self.size_hint)


_SETTINGS_TTL = 1.0
_settings: tuple[float, config.Settings] | None = None


def _current_settings() -> config.Settings:
    """config.current_settings(), asked at most once a second: each call stats and mkdirs
    $SVC_HOME (~120 µs), a third of the bridge's own time per request. Edits apply within 1 s."""
    global _settings
    now = time.monotonic()
    if _settings is None or now - _settings[0] > _SETTINGS_TTL:
        _settings = (now, config.current_settings())
    return _settings[1]


def find_profile(route: Route) -> config.Profile:
    profile = _current_settings().profiles.get(route.profile)
    if profile is None:
        raise ir.BridgeError(404, f"no profile {route.profile!r} in settings.json")
    return profile


def resolve_model(profile: config.Profile, requested: str) -> str:
    """The upstream id for a client-facing id: aliases first; 404 for ids the profile lacks."""
    requested = requested.removeprefix("models/")
    if requested in profile.model_aliases:
        return profile.model_aliases[requested]
    if profile.models and requested not in profile.models:
        raise ir.BridgeError(404, f"model {requested!r} is not served by profile {profile.id!r}")
    return requested


def _drop_images(req: ir.Request) -> bool:
    dropped = False
    for msg in req.messages:
        for part in msg.parts:
            if isinstance(part, ir.ToolResult):
                kept = [p for p in part.content if not isinstance(p, ir.Image)]
                dropped |= len(kept) != len(part.content)
                part.content = kept
        kept_parts = [p for p in msg.parts if not isinstance(p, ir.Image)]
        dropped |= len(kept_parts) != len(msg.parts)
        msg.parts = kept_parts
    return dropped


def apply_capabilities(req: ir.Request, caps: dict[str, bool]) -> list[str]:
    """Drop what the model cannot take, saying so (the client gets an X-Svc-Warning header)."""
    warnings = []
    if caps.get("image_input") is False and _drop_images(req):
        warnings.append("images dropped: the model does not take image input")
    if caps.get("tools") is False and req.tools:
        req.tools, req.tool_choice = [], None
        warnings.append("tools dropped: the model does not take tools")
    return warnings


def _restricted(profile: config.Profile) -> bool:
    return any(profile.capabilities.get(c) is False for c in ("image_input", "tools"))


def _responses_history(
    route: Route, body: dict[str, Any], req: ir.Request
) -> list[ir.Message] | None:
    """For a Responses client on another dialect's provider: resolve `previous_response_id` from
    svc's store, and say whether to remember this turn (not when the client sent store: false)."""
    if route.dialect != "openai-responses":
        return None
    previous = body.get("previous_response_id")
    if previous:
        stored = response_store.recall(previous)
        if stored is None:
            raise ir.BridgeError(404, f"Previous response with id {previous!r} not found.")
        req.messages = [*stored.messages, *req.messages]
    return None if body.get("store") is False else list(req.messages)


def _upstream_headers(
    provider: ModuleType, profile: config.Profile, stream: bool
) -> dict[str, str]:
    """Built from scratch: nothing the client sent (its key above all) is forwarded."""
    return {
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
        **provider.auth_headers(profile.resolved_key()),
        **profile.headers,
    }


def prepare(route: Route, body: dict[str, Any], raw: str | bytes = b"") -> Outbound:
    """What to send where. `raw` (the client's JSON text) is forwarded as is when nothing in it
    needs to change: same dialect and the same model id on both sides."""
    profile = find_profile(route)
    client = dialects.get(route.dialect)
    provider = dialects.get(profile.provider)
    requested = (route.model if route.dialect == "gemini" else body.get("model")) or ""
    if not isinstance(requested, str) or not requested:
        raise ir.bad_request("`model` is required")
    upstream_model = resolve_model(profile, requested)
    stream = route.stream if route.dialect == "gemini" else bool(body.get("stream"))
    passthrough = profile.provider == route.dialect and not _restricted(profile) and route.sse
    warnings: list[str] = []
    history: list[ir.Message] | None = None
    payload: Any = raw
    if passthrough:
        if route.dialect != "gemini" and (body.get("model") != upstream_model or not raw):
            body["model"] = upstream_model
            payload = body
    else:
        req = client.decode_request(body, requested)
        req.model, req.stream = upstream_model, stream
        history = _responses_history(route, body, req)
        warnings = apply_capabilities(req, profile.capabilities)
        payload = req  # encoded in take_body, after remote images are fetched
    include_usage = route.dialect != "openai-chat" or bool(
        (body.get("stream_options") or {}).get("include_usage")
    )
    return Outbound(
        client=client,
        provider=provider,
        requested=requested.removeprefix("models/"),
        upstream_model=upstream_model,
        url=provider.upstream_url(profile.base_url, upstream_model, stream),
        headers=_upstream_headers(provider, profile, stream),
        payload=payload,
        stream=stream,
        passthrough=passthrough,
        include_usage=include_usage,
        sse=route.sse,
        warnings=warnings,
        history=history if not passthrough else None,
        size_hint=len(raw),
    )


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def error_body(out: Outbound, status: int, raw: bytes) -> dict[str, Any]:
    """An upstream error, its status kept and its message put into the client's dialect."""
    message = out.provider.decode_error(_json(raw)) or f"provider answered {status}"
    return out.client.encode_error(status, message)


def response_body(out: Outbound, raw: bytes) -> bytes:
    if out.passthrough and out.requested == out.upstream_model:
        return raw
    data = _json(raw)
    if not isinstance(data, dict):
        raise ir.BridgeError(502, "the provider answered something that is not a JSON object")
    if out.passthrough:
        out.client.rewrite_model(data, out.requested)
        return dumps(data).encode()
    resp = out.provider.decode_response(data)
    resp.model = out.requested
    encoded = out.client.encode_response(resp)
    if out.history is not None:
        answer = ir.Message("assistant", resp.parts)
        response_store.remember(encoded["id"], [*out.history, answer], encoded)
    return dumps(encoded).encode()


# --- streams ---------------------------------------------------------------------------------


class SSEParser:
    """Incremental: keeps partial frames across reads; CRLF or LF; `data:` with or without space."""

    def __init__(self) -> None:
        self.buf = b""

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        self.buf = (self.buf + chunk).replace(b"\r\n", b"\n")
        *frames, self.buf = self.buf.split(b"\n\n")
        return [f for f in (self._frame(fr) for fr in frames) if f is not None]

    @staticmethod
    def _frame(frame: bytes) -> tuple[str, str] | None:
        event, data = "", []
        for line in frame.decode("utf-8", "replace").split("\n"):
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line.startswith("event:"):
                event = line[6:].strip()
        return (event, "\n".join(data)) if data else None


class StreamTranslator:
    """Provider SSE bytes in, client-dialect bytes out, one upstream event at a time."""

    def __init__(self, out: Outbound) -> None:
        self.out = out
        self.raw = out.passthrough and out.requested == out.upstream_model
        self.parser = SSEParser()
        self.decoder = dialects.stream(out.provider.NAME).StreamDecoder()
        kwargs = {} if out.client.NAME != "gemini" else {"array": not out.sse}
        encoder = dialects.stream(out.client.NAME).StreamEncoder
        self.encoder = encoder(out.requested, out.include_usage, **kwargs)
        self.events = 0  # upstream events seen: a stream that carried none is a failure
        self.failed = False
        self.answer: list[ir.Event] = []  # kept only when this turn is to be remembered

    def _encode(self, ev: ir.Event) -> bytes:
        if self.out.history is not None:
            self.answer.append(ev)
        return self.encoder.encode(ev)

    def _finish(self) -> bytes:
        """The encoder's closing events; a Responses turn is remembered under the id it got."""
        tail = self.encoder.close()
        final = getattr(self.encoder, "final", None)
        if self.out.history is not None and final is not None:
            answer = ir.Message("assistant", ir.collect(self.answer, self.out.requested).parts)
            response_store.remember(final["id"], [*self.out.history, answer], final)
        return tail

    def feed(self, chunk: bytes) -> bytes:
        if self.raw:
            return chunk
        pieces = []
        for event, data in self.parser.feed(chunk):
            if data == "[DONE]":
                continue
            try:
                obj = json.loads(data)
            except ValueError:
                continue  # keep-alives and junk lines are not events
            self.events += 1
            if self.out.passthrough:
                pieces.append(self._rewrite(event, obj))
                continue
            for ev in self.decoder.feed(event, obj):
                if not self.failed:  # nothing may follow the dialect's error event
                    pieces.append(self._encode(ev))
                    self.failed = isinstance(ev, ir.Error)
        return b"".join(pieces)

    def whole(self, raw: bytes) -> bytes:
        """A provider that answered a stream request with one JSON body: replay it as events."""
        data = _json(raw)
        if not isinstance(data, dict):
            return self.fail(502, "the provider answered something that is not a JSON object")
        self.events += 1
        resp = self.out.provider.decode_response(data)
        return b"".join(self._encode(ev) for ev in ir.events_of(resp)) + self._finish()

    def _rewrite(self, event: str, obj: dict[str, Any]) -> bytes:
        self.out.client.rewrite_model(obj, self.out.requested)
        head = f"event: {event}\n" if event else ""
        return f"{head}data: {dumps(obj)}\n\n".encode()

    def close(self) -> bytes:
        if self.failed:
            return b""
        if not self.raw and self.events == 0:
            return self.fail(502, "the provider ended the stream without sending any event")
        if self.out.passthrough:
            tail = (
                b"data: [DONE]\n\n"
                if self.out.client.NAME == "openai-chat" and not self.raw
                else b""
            )
            return tail
        return b"".join(self._encode(ev) for ev in self.decoder.close()) + self._finish()

    def fail(self, status: int, message: str) -> bytes:
        """The client dialect's own error event, for failures after the 200 went out."""
        if self.failed:
            return b""
        self.failed = True
        # Relayed bytes may stop mid-frame: a blank line first keeps the error its own event.
        head = b"\n\n" if self.raw and self.out.client.NAME != "gemini" else b""
        return head + self.encoder.encode(ir.Error(status, message))


def count_request(route: Route, body: dict[str, Any]) -> tuple[str, dict[str, str], bytes] | None:
    """When the provider speaks the client's dialect, its own counting endpoint answers exactly:
    (url, headers, body) for it; None when only the local estimate applies."""
    profile = find_profile(route)
    if profile.provider != route.dialect or _restricted(profile):
        return None
    provider = dialects.get(profile.provider)
    requested = (route.model if route.dialect == "gemini" else body.get("model")) or ""
    upstream_model = resolve_model(profile, requested) if requested else ""
    if route.dialect != "gemini" and upstream_model:
        body = {**body, "model": upstream_model}
    url = provider.count_tokens_url(profile.base_url, upstream_model)
    return url, _upstream_headers(provider, profile, False), dumps(body).encode()


def count_tokens(route: Route, body: dict[str, Any]) -> dict[str, Any]:
    """A local estimate in the client's shape (about 4 characters a token), for providers of
    another dialect (or whose count endpoint failed): clients use it as a rough context gauge."""
    from bridge_app.dialects import anthropic, gemini, openai_responses

    profile = find_profile(route)
    client = dialects.get(route.dialect)
    requested = (route.model if route.dialect == "gemini" else body.get("model")) or ""
    if requested:
        resolve_model(profile, requested)
    if route.dialect == "gemini" and "generateContentRequest" in body:
        body = body["generateContentRequest"]
    total = anthropic.estimate_tokens(client.decode_request(body, requested or "count"))
    if route.dialect == "gemini":
        return gemini.count_tokens(total)
    if route.dialect == "openai-responses":
        return openai_responses.input_tokens(total)
    return anthropic.count_tokens_body(total)


async def inline_remote_images(out: Outbound) -> None:
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
    from bridge_app import upstream

    try:
        data, media_type = await upstream.fetch_image(image.url)
    except ir.BridgeError as exc:
        warnings.append(f"image {image.url} sent as a URL: {exc.message}")
        return
    image.data, image.media_type, image.url = base64.b64encode(data).decode(), media_type, ""
