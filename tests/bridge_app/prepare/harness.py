"""Profiles and helpers for the `translate.prepare` tests: routes as a client would call them,
bodies, and the body as it would go upstream."""

from __future__ import annotations

import json
from typing import Any

from bridge_app import bodies, routes, translate

P = "/svc/local-api/{profile}/tests"
PNG = "data:image/png;base64,AAAA"


def _profile(provider: str, base_url: str, key: str, **extra: Any) -> dict[str, Any]:
    return {
        "provider": provider,
        "base_url": base_url,
        "api_key": key,
        "models": ["up-model", "up-model-2"],
        "model_aliases": {"client-model": "up-model"},
        **extra,
    }


PROFILES = {
    "chat": _profile("openai-chat", "https://chat.example/v1", "key-chat"),
    "responses": _profile("openai-responses", "https://resp.example/v1", "key-resp"),
    "claude": _profile("anthropic", "https://claude.example", "key-claude"),
    "gemini": _profile("gemini", "https://gemini.example", "key-gemini"),
    "gemini-v1": _profile("gemini", "https://gemini.example/v1", "key-gemini"),
    "open": {"provider": "openai-chat", "base_url": "https://open.example/v1/"},  # any model
    "noimg": _profile(
        "openai-chat", "https://chat.example/v1", "k", capabilities={"image_input": False}
    ),
    "notools": _profile("anthropic", "https://claude.example", "k", capabilities={"tools": False}),
    "extra": _profile("anthropic", "https://claude.example", "k", headers={"x-team": "blue"}),
    "fromenv": {
        "provider": "gemini",
        "base_url": "https://gemini.example",
        "api_key_env": "SVC_TEST_PREPARE_KEY",
    },
}


def route(profile: str, dialect: str, tail: str, query: bytes = b"") -> routes.Route:
    parsed = routes.parse(f"{P.format(profile=profile)}/{dialect}/{tail}", query)
    assert parsed is not None
    return parsed


def chat(profile: str = "chat") -> routes.Route:
    return route(profile, "openai-chat", "v1/chat/completions")


def messages(profile: str = "claude") -> routes.Route:
    return route(profile, "anthropic", "v1/messages")


def responses(profile: str = "responses") -> routes.Route:
    return route(profile, "openai-responses", "v1/responses")


def gemini(profile: str, model: str, stream: bool = False, sse: bool = True) -> routes.Route:
    method = "streamGenerateContent" if stream else "generateContent"
    return route(profile, "gemini", f"v1beta/models/{model}:{method}", b"alt=sse" if sse else b"")


def chat_body(text: str = "hi", model: str = "client-model", **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}], **extra}


def prepare(r: routes.Route, body: dict[str, Any], **kw: Any) -> translate.Outbound:
    return translate.prepare(r, body, json.dumps(body), **kw)


def sent(out: translate.Outbound) -> dict[str, Any]:
    """The body that would go upstream, as the provider would parse it."""
    body = out.take_body()
    raw = body.whole() if isinstance(body, bodies.JsonBody) else bytes(body)
    return json.loads(raw)
