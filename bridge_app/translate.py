"""Translation of one exchange's bodies: pick the profile and model, turn the client's request
into what the provider takes (`prepare` → `Outbound`), and turn a whole answer or an error back
into the client's dialect. Plain functions over the codecs; no I/O (exchange.py does that)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bridge_app import bodies, dialects, ir
from bridge_app.dialects.common import dumps
from bridge_app.routes import Route
from core import config, untrusted_json


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
    # svc asked the provider for usage the client did not ask for (to meter it, §16): the
    # usage-only chunk is svc's, not the client's.
    hide_usage: bool = False
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


def _current_settings() -> config.Settings:
    return config.recent_settings()  # edits apply within 1 s


def find_profile(route: Route) -> config.Profile:
    profile = _current_settings().profiles.get(route.profile)
    if profile is None:
        raise ir.BridgeError(404, f"no profile {route.profile!r} in settings.json")
    return profile


def missing_key(profile: config.Profile) -> str | None:
    """Why the profile has no key to send, when its `api_key_env` names a variable unset (or
    empty) in svc's own environment; None otherwise (a profile with no key at all is allowed:
    local servers often want none)."""
    if profile.api_key_env and not profile.resolved_key():
        return (
            f"svc cannot call profile {profile.id!r}: ${profile.api_key_env} is not set in svc's "
            "environment (the profile's api_key_env). Set it where svc starts and restart svc, "
            "or put the key in settings.json as api_key."
        )
    return None


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


Recall = Callable[[str], list[ir.Message] | None]


def _responses_history(
    route: Route, body: dict[str, Any], req: ir.Request, recall: Recall | None
) -> list[ir.Message] | None:
    """For a Responses client on another dialect's provider: put the turns behind
    `previous_response_id` first (`recall` finds them), and say whether to remember this turn
    (not when the client sent store: false)."""
    if route.dialect != "openai-responses":
        return None
    previous_id = body.get("previous_response_id")
    if previous_id:
        previous = recall(previous_id) if recall else None
        if previous is None:
            raise ir.BridgeError(404, f"Previous response with id {previous_id!r} not found.")
        req.messages = [*previous, *req.messages]
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


def prepare(
    route: Route,
    body: dict[str, Any],
    raw: str | bytes = b"",
    recall: Recall | None = None,
) -> Outbound:
    """What to send where. `raw` (the client's JSON text) is forwarded as is when nothing in it
    needs to change: same dialect and the same model id on both sides. `recall` finds the turns
    behind a Responses `previous_response_id` when svc translates (exchange.py owns them)."""
    profile = find_profile(route)
    if (why := missing_key(profile)) is not None:
        # 401, not 503: it is a credential problem, and the SDKs (and Claude Code, Codex) retry
        # a 5xx several times before the user sees it; a 401 is shown at once, with this text.
        raise ir.BridgeError(401, why)
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
        history = _responses_history(route, body, req, recall)
        warnings = apply_capabilities(req, profile.capabilities)
        payload = req  # encoded in take_body, after remote images are fetched
    include_usage = route.dialect != "openai-chat" or bool(
        (body.get("stream_options") or {}).get("include_usage")
    )
    hide_usage = passthrough and stream and not include_usage and isinstance(body, dict)
    if hide_usage:  # an OpenAI Chat stream reports usage only when asked
        body["model"] = upstream_model
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        payload = body
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
        hide_usage=hide_usage,
        sse=route.sse,
        warnings=warnings,
        history=history if not passthrough else None,
        size_hint=len(raw),
    )


def _json(raw: bytes) -> Any:
    try:
        return untrusted_json.loads(raw, max_bytes=bodies.MAX_ANSWER)
    except ValueError:
        return raw.decode("utf-8", "replace")


def error_body(out: Outbound, status: int, raw: bytes) -> dict[str, Any]:
    """An upstream error, its status kept and its message put into the client's dialect."""
    message = out.provider.decode_error(_json(raw)) or f"provider answered {status}"
    return out.client.encode_error(status, message)


def json_of(raw: bytes) -> Any:
    return _json(raw)


def response_body(out: Outbound, raw: bytes) -> tuple[bytes, ir.Response | None, Any]:
    """(the client's body, the neutral response when translated, the encoded object)."""
    if out.passthrough and out.requested == out.upstream_model:
        return raw, None, None
    data = _json(raw)
    if not isinstance(data, dict):
        raise ir.BridgeError(502, "the provider answered something that is not a JSON object")
    if out.passthrough:
        out.client.rewrite_model(data, out.requested)
        return dumps(data).encode(), None, data
    resp = out.provider.decode_response(data)
    resp.model = out.requested
    encoded = out.client.encode_response(resp)
    return dumps(encoded).encode(), resp, encoded


# --- counting tokens -------------------------------------------------------------------------


def count_request(route: Route, body: dict[str, Any]) -> tuple[str, dict[str, str], bytes] | None:
    """When the provider speaks the client's dialect, its own counting endpoint answers exactly:
    (url, headers, body) for it; None when only the local estimate applies."""
    profile = find_profile(route)
    if profile.provider != route.dialect or _restricted(profile) or missing_key(profile):
        return None
    provider = dialects.get(profile.provider)
    requested = (route.model if route.dialect == "gemini" else body.get("model")) or ""
    upstream_model = resolve_model(profile, requested) if requested else ""
    if route.dialect != "gemini" and upstream_model:
        body = {**body, "model": upstream_model}
    url = provider.count_tokens_url(profile.base_url, upstream_model)
    if url is None:
        return None
    return url, _upstream_headers(provider, profile, False), dumps(body).encode()


def count_tokens(route: Route, body: dict[str, Any]) -> dict[str, Any]:
    """A local estimate in the client's shape (about 4 characters a token), for providers of
    another dialect (or whose count endpoint failed): clients use it as a rough context gauge."""
    profile = find_profile(route)
    client = dialects.get(route.dialect)
    requested = (route.model if route.dialect == "gemini" else body.get("model")) or ""
    if requested:
        resolve_model(profile, requested)
    if route.dialect == "gemini" and "generateContentRequest" in body:
        body = body["generateContentRequest"]
    return client.encode_token_count(
        ir.estimate_tokens(client.decode_request(body, requested or "count"))
    )
