"""URL shapes the official SDKs build (docs/bridge.md) and the loopback gate (contract §2)."""

from __future__ import annotations

import pytest

from bridge_app import gate, routes

P = "/svc/local-api/p1/scope"


@pytest.mark.parametrize(
    ("path", "dialect", "operation", "model"),
    [
        (f"{P}/openai-chat/v1/chat/completions", "openai-chat", "generate", ""),
        (f"{P}/openai-chat/chat/completions", "openai-chat", "generate", ""),
        (f"{P}/openai-chat/v1/models", "openai-chat", "models", ""),
        (f"{P}/openai-chat/v1/models/m-1.5", "openai-chat", "model", "m-1.5"),
        (f"{P}/openai-responses/v1/responses", "openai-responses", "generate", ""),
        (f"{P}/openai-responses/v1/responses/input_tokens", "openai-responses", "count_tokens", ""),
        (f"{P}/anthropic/v1/messages", "anthropic", "generate", ""),
        (f"{P}/anthropic/v1/v1/messages", "anthropic", "generate", ""),
        (f"{P}/anthropic/v1/messages/count_tokens", "anthropic", "count_tokens", ""),
        (f"{P}/anthropic/v1/models/claude", "anthropic", "model", "claude"),
        (
            f"{P}/gemini/v1/models/gemini-2.5-flash:generateContent",
            "gemini",
            "generate",
            "gemini-2.5-flash",
        ),
        (f"{P}/gemini/v1beta/models/g:countTokens", "gemini", "count_tokens", "g"),
        (f"{P}/gemini/v1/v1/models/g:generateContent", "gemini", "generate", "g"),
        (f"{P}/gemini/v1beta/models", "gemini", "models", ""),
        ("/svc/bridge/p1/anthropic/v1/messages", "anthropic", "generate", ""),
    ],
)
def test_sdk_paths_map_to_routes(path: str, dialect: str, operation: str, model: str) -> None:
    route = routes.parse(path)
    assert route is not None
    assert (route.dialect, route.operation, route.model, route.profile) == (
        dialect,
        operation,
        model,
        "p1",
    )


def test_gemini_stream_route_reads_alt_sse() -> None:
    route = routes.parse(f"{P}/gemini/v1beta/models/g:streamGenerateContent", b"alt=sse")
    assert route is not None and route.stream and route.sse
    plain = routes.parse(f"{P}/gemini/v1beta/models/g:streamGenerateContent")
    assert plain is not None and plain.stream and not plain.sse


def test_legacy_routes_use_scope_legacy() -> None:
    route = routes.parse("/svc/bridge/p1/openai-chat/v1/chat/completions")
    assert route is not None and route.family == "legacy" and route.scope == "legacy"


@pytest.mark.parametrize(
    "path",
    ["/svc/local-api/p1/bad scope!/openai-chat/v1/models", "/svc/local-api/p1/s/klingon/v1/models"],
)
def test_malformed_scope_or_dialect_is_no_route(path: str) -> None:
    assert routes.parse(path) is None


def scope(host: str = "127.0.0.1:8000", peer: str = "127.0.0.1", **headers: str) -> dict:
    pairs = [(b"host", host.encode())] + [
        (k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()
    ]
    return {"client": (peer, 5000), "headers": pairs}


@pytest.mark.parametrize(
    "host", ["localhost", "localhost:8000", "127.0.0.1:1", "[::1]:8000", "[::1]", "::1"]
)
def test_gate_allows_loopback_hosts(host: str) -> None:
    assert gate.refusal(scope(host)) is None


@pytest.mark.parametrize(
    "host",
    ["evil.com", "localhost.evil.com", "127.0.0.1.nip.io", "127.0.0.1:99999", "", "10.0.0.1"],
)
def test_gate_refuses_other_hosts(host: str) -> None:
    assert gate.refusal(scope(host)) is not None


def test_gate_refuses_non_loopback_peers_and_origins() -> None:
    assert gate.refusal(scope(peer="192.168.1.5")) is not None
    assert gate.refusal(scope(peer="::ffff:10.0.0.2")) is not None
    assert gate.refusal(scope(peer="::ffff:127.0.0.1")) is None
    assert gate.refusal(scope(origin="https://evil.com")) is not None
    assert gate.refusal(scope(origin="http://localhost:5173")) is None


def test_gate_refuses_pages_svc_serves_itself() -> None:
    """A shared preview is a page on svc's own port: its script must not spend model keys."""
    own = {**scope(origin="http://127.0.0.1:8000"), "server": ("127.0.0.1", 8000)}
    assert gate.refusal(own) == "the bridge refuses pages served by svc itself"
    other = {**scope(origin="http://localhost:5173"), "server": ("127.0.0.1", 8000)}
    assert gate.refusal(other) is None
