"""What this member does when another asks (contract §18 "Act anywhere"): runs a forwarded API
request through its own Django views, and says whether a subagent run or turn is its own.

A forwarded request is run as an ASGI request built here, in this process: nothing a client sends
can mark a request as the fleet's. It carries the caller's surface — a paired device's request
is run as the remote listener's (`svc_remote`, the device), so the owner refuses what its remote
listener refuses — and who asked, for the record (`svc_fleet`)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async

from core.asgi_helpers import ASGIApp
from core.errors import DomainError
from fleet_app import routes
from fleet_app.signing import Envelope
from sessions_app import selectors
from subagents_app import diffs, subagents

logger = logging.getLogger(__name__)

FORWARDED_HEADERS = ("content-type", "accept", "x-svc-fleet-scope")


def request_scope(
    body: dict[str, Any], caller: dict[str, str], content_length: int
) -> dict[str, Any]:
    path = str(body["path"])
    # Django reads as many body bytes as Content-Length says.
    headers = [(b"host", b"127.0.0.1"), (b"content-length", str(content_length).encode())]
    for name, value in body.get("headers") or []:
        if str(name).lower() in FORWARDED_HEADERS:
            headers.append((str(name).lower().encode(), str(value).encode("latin-1")))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": str(body["method"]).upper(),
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": str(body.get("query") or "").encode("latin-1"),
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    return scope | surface_of(body, caller)


def surface_of(body: dict[str, Any], caller: dict[str, str]) -> dict[str, Any]:
    """The scope keys that say who asks: the fleet member and the person's surface on it."""
    marks: dict[str, Any] = {"svc_fleet": caller}
    if body.get("surface") == "remote" and body.get("device"):
        marks |= {"svc_remote": True, "svc_device": str(body["device"])}
        if body.get("device_name"):
            marks["svc_device_name"] = str(body["device_name"])
    return marks


def caller_of(envelope: Envelope, names: dict[str, str]) -> dict[str, str]:
    """The asking member, by the name it gives itself (signed with the rest) when it gives one:
    the heartbeat here may not have seen a member that joined a moment ago."""
    named = str(envelope.body.get("caller_name") or names.get(envelope.sender, ""))
    return {"machine": envelope.sender, "machine_name": named[:64]}


async def run_request(app: ASGIApp, scope: dict[str, Any], content: bytes) -> dict[str, Any]:
    """Run one request through Django; its status, content type and body (base64)."""
    sent = False
    never = asyncio.Event()  # Django waits for a disconnect while it works: there is none

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": content, "more_body": False}
        await never.wait()
        return {"type": "http.disconnect"}

    answer: dict[str, Any] = {"status": 500, "content_type": "", "body": ""}
    chunks: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            for name, value in message.get("headers") or []:
                if name.lower() == b"content-type":
                    answer["content_type"] = value.decode("latin-1")
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    answer["body"] = base64.b64encode(b"".join(chunks)).decode()
    return answer


def refused(method: str, path: str) -> dict[str, Any]:
    message = (
        f"{method} {path} is not done for another machine: a machine's settings, agents, "
        "tunnels, pairings and channels are changed on its own dashboard"
    )
    body = {"error": {"status": 403, "code": "not_for_the_fleet", "message": message}}
    return {
        "status": 403,
        "content_type": "application/json",
        "body": base64.b64encode(json.dumps(body).encode()).decode(),
    }


class Inbound:
    """The bus handlers a member answers other members with."""

    def __init__(self, names: Callable[[], dict[str, str]], app: ASGIApp) -> None:
        self._app = app  # Django's handler, the daemon's parts in its scope (svcproject.assembly)
        self._names = names  # machine id → name, as the heartbeat last read them

    async def http(self, envelope: Envelope) -> dict[str, Any]:
        body = envelope.body
        method, path = str(body.get("method", "")).upper(), str(body.get("path", ""))
        if not routes.forwardable(method, path):
            logger.warning("fleet: refused %s %s asked by %s", method, path, envelope.sender)
            return refused(method, path)
        content = base64.b64decode(str(body.get("body") or ""))
        scope = request_scope(body, caller_of(envelope, self._names()), len(content))
        return await run_request(self._app, scope, content)

    async def whose(self, envelope: Envelope) -> dict[str, Any]:
        """{"has": true} when the subagent run or turn named is this member's."""
        kind, given = str(envelope.body.get("kind", "")), str(envelope.body.get("id", ""))
        return {"has": await database_sync_to_async(has_here)(kind, given)}


def has_here(kind: str, given: str) -> bool:
    """Whether this member has the session, subagent run or turn named (by id or prefix)."""

    if kind == "session":
        return bool(selectors.session_id_resolve(given))
    try:
        if kind == "subagent":
            diffs.subagent_get(given)
        elif kind == "turn":
            subagents.turn_get(given)
        else:
            return False
    except DomainError:
        return False
    return True
