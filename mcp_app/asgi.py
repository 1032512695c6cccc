"""/mcp: the MCP SDK's streamable-HTTP app mounted beside Django, behind the MCP token.

daphne runs no ASGI lifespan, and the SDK's session manager must be running before any request,
so the manager is started lazily, once per event loop (tests get a new loop per test).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from mcp_app.server import mcp
from svcproject import auth

JSONRPC_UNAUTHORIZED = -32001


def _transport_security() -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


class LazyMCPApp:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._app: Any = None
        self._ready: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    def _start(self) -> None:
        # No await between the loop check and task creation: concurrent first requests are safe.
        self._loop = asyncio.get_running_loop()
        self._app = mcp.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=False,
            transport_security=_transport_security(),
        )
        self._ready = asyncio.Event()
        self._task = self._loop.create_task(self._run(mcp.session_manager, self._ready))

    @staticmethod
    async def _run(manager: Any, ready: asyncio.Event) -> None:
        async with manager.run():
            ready.set()
            await asyncio.Future()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if self._loop is not asyncio.get_running_loop():
            self._start()
        assert self._ready is not None
        await self._ready.wait()
        await self._app(scope, receive, send)


def unauthorized_body() -> dict:
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": JSONRPC_UNAUTHORIZED,
            "message": "Missing or wrong svc MCP token. Send 'Authorization: Bearer <mcp_token>' "
            "from $SVC_HOME/auth.json; after `manage.py rotate_tokens` restart the agent so it "
            "re-reads its MCP config.",
        },
    }


class MCPGuard:
    """Loopback peer, then the MCP token (the owner token is refused here), then the SDK."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if not auth.peer_is_loopback((scope.get("client") or ("", 0))[0]):
            await auth.send_json(send, 403, {"error": "forbidden"})
            return
        token, _ = auth.token_from_scope(scope)
        if auth.token_kind(token) != "mcp":
            await auth.send_json(
                send,
                401,
                unauthorized_body(),
                headers=[(b"www-authenticate", b'Bearer realm="svc-mcp"')],
            )
            return
        await self.app(scope, receive, send)


lazy_mcp_app = LazyMCPApp()
application = MCPGuard(lazy_mcp_app)
