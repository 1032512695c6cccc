"""svc's admission rules (svcproject.admission) and the server hook's start-up self-test."""

from __future__ import annotations

import pytest

from core import config, server_compat
from svcproject import admission

MIB = 1024 * 1024


def head(path: str, *headers: tuple[bytes, bytes], length: int | None = MIB, method: str = "POST"):
    return admission.head_of(method.encode(), path.encode(), list(headers), "127.0.0.1", length)


def owner() -> tuple[bytes, bytes]:
    return (b"Authorization", f"Bearer {config.current_auth().owner_token}".encode())


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_HOME", str(tmp_path))


def test_requests_without_a_body_are_left_to_the_app() -> None:
    assert admission.admit(head("/api/settings", length=None, method="GET")) is None
    assert admission.admit(head("/api/settings", length=0)) is None


def test_a_body_needs_the_credential_of_its_surface() -> None:
    assert admission.admit(head("/api/settings")).status == 401
    assert admission.admit(head("/api/settings", owner())) is None
    mcp = (b"Authorization", f"Bearer {config.current_auth().mcp_token}".encode())
    assert admission.admit(head("/mcp", owner())).status == 401  # the owner token is not MCP's
    assert admission.admit(head("/mcp", mcp)) is None
    assert admission.admit(head("/preview/s/abc/")).status == 405


def test_limits_follow_the_surface() -> None:
    assert admission.admit(head("/api/settings", owner(), length=4 * MIB + 1)).status == 413
    assert admission.admit(head("/api/settings", owner(), length=4 * MIB)) is None
    bridge = "/svc/local-api/p/s/openai-chat/v1/chat/completions"
    local = (b"host", b"127.0.0.1:8000")
    assert admission.admit(head(bridge, local, length=64 * MIB)) is None
    assert admission.admit(head(bridge, local, length=64 * MIB + 1)).status == 413


def test_a_chunked_body_is_judged_on_its_headers_too() -> None:
    chunked = (b"Transfer-Encoding", b"chunked")
    assert admission.admit(head("/api/settings", chunked, length=None)).status == 401


def test_the_bridge_gate_refuses_on_the_headers_in_the_clients_dialect() -> None:
    bridge = "/svc/local-api/p/s/anthropic/v1/messages"
    answer = admission.admit(head(bridge, (b"host", b"evil.example")))
    assert answer.status == 403 and b'"type": "error"' in answer.body  # Anthropic's shape


def test_the_self_test_fails_when_the_hook_does_not_refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    import daphne.http_protocol as daphne_http

    working = server_compat.admitting_request_class(
        admission.admit, admission.head_of, admission.body_limit
    )
    monkeypatch.setattr(daphne_http, "WebRequest", working)
    assert server_compat.admission_self_test() is None
    broken = server_compat.admitting_request_class(
        lambda head: None, admission.head_of, admission.body_limit
    )
    monkeypatch.setattr(daphne_http, "WebRequest", broken)
    assert "not refused" in (server_compat.admission_self_test() or "")
