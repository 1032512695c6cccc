"""The daemon's parts are handed over, not looked up (docs/runtime.md "Parts handed over"): the
outermost ASGI app puts them in every scope and serves nothing before it has them, an edge
given a scope without them says so, and the gates that tell the remote listener apart (the
remote gate in the app, admission inside daphne) read its ports from those same parts."""

from __future__ import annotations

from typing import Any

import pytest

from core.asgi_helpers import PARTS
from harness.runtime import scoped
from remote_app.gate import RemoteGate
from sessions_app import parts as session_parts
from svcproject import admission
from svcproject.parts import InScope

REMOTE_PORT = 47123  # the remote listener's port, as the parts' Reach knows it
MAIN_PORT = 47124


async def nothing() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def serve(app: Any, scope: dict[str, Any]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, nothing, send)
    return sent


def http(path: str, port: int) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"",
        "headers": [],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", port),
    }


async def test_every_scope_carries_the_parts_once_they_are_handed_over(parts: Any) -> None:
    seen: list[Any] = []

    async def edge(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope[PARTS])

    outermost = InScope(edge)
    with pytest.raises(RuntimeError, match="built when the daemon binds"):
        await serve(outermost, http("/api/status", MAIN_PORT))  # before bind: nothing served
    assert seen == []
    outermost.parts = parts  # what startup does at bind
    await serve(outermost, http("/api/status", MAIN_PORT))
    assert seen == [parts]


def test_an_edge_given_a_scope_without_parts_says_where_they_come_from() -> None:
    with pytest.raises(RuntimeError, match=r"did not pass svcproject\.parts\.InScope"):
        session_parts.of(http("/ws", MAIN_PORT))


async def test_the_remote_gate_knows_the_remote_listener_by_the_parts_reach(parts: Any) -> None:
    reached: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    gate = scoped(RemoteGate(app), parts)
    parts.reach.remote_port = REMOTE_PORT
    on_remote = await serve(gate, http("/admin/", REMOTE_PORT))
    assert on_remote[0]["status"] == 404 and reached == []  # never served on the remote listener
    on_main = await serve(gate, http("/admin/", MAIN_PORT))
    assert on_main[0]["status"] == 200 and reached == ["/admin/"]


def test_admission_knows_the_remote_listener_from_the_same_parts(
    parts: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from svcproject import asgi

    def stranger_writes(port: int) -> admission.Head:
        return admission.head_of(b"POST", b"/api/sessions", [], "127.0.0.1", 10, port)

    parts.reach.remote_port = REMOTE_PORT
    monkeypatch.setattr(asgi.application, "parts", None)  # not yet bound: no remote listener
    answer = asgi.admit(stranger_writes(REMOTE_PORT))
    assert answer is not None and b'"not_authenticated"' in answer.body  # the main port's rule
    monkeypatch.setattr(asgi.application, "parts", parts)
    answer = asgi.admit(stranger_writes(REMOTE_PORT))
    assert answer is not None and b'"not_paired"' in answer.body  # the remote listener's rule
    answer = asgi.admit(stranger_writes(MAIN_PORT))
    assert answer is not None and b'"not_authenticated"' in answer.body
