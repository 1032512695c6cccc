"""/mcp: the MCP SDK's streamable-HTTP app mounted beside Django, behind the MCP token.

The SDK's session manager is started by the runtime when the daemon binds (contract §12).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, cast

from mcp.server.transport_security import TransportSecuritySettings

from core import auth
from core.asgi_helpers import parts_in
from core.runtime import Runtime
from mcp_app.server import mcp

JSONRPC_UNAUTHORIZED = -32001


def _transport_security() -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


class MCPApp:
    """The SDK's streamable-HTTP session manager, owned by the runtime: started with it (daphne
    runs no ASGI lifespan, and the manager must run before any request) and stopped with it.

    Requests go to the manager's own ASGI entry, not through the Starlette app the SDK wraps
    around it: svc's router has already matched /mcp and MCPGuard has checked the caller, so the
    wrapper's router, exception middlewares and route match (22 µs a request on the bench
    machine, of ~2 ms) would only repeat what is done. A request for /mcp/ is served as /mcp
    (the wrapper answered it with a redirect). The manager still applies the body limit, the
    Host/Origin check and the protocol rules."""

    def __init__(self) -> None:
        self.app: Any = None
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        mcp.streamable_http_app(  # builds the session manager with these settings
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=False,
            transport_security=_transport_security(),
        )
        self.app = mcp.session_manager.handle_request
        ready = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(
            self._run(mcp.session_manager, ready), name="svc mcp session manager"
        )
        await ready.wait()

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


class MountParts(Protocol):
    """What the /mcp mount reads of the daemon's parts in the scope (svcproject.parts)."""

    @property
    def runtime(self) -> Runtime: ...
    @property
    def mcp(self) -> MCPApp: ...


async def running_mcp_app(scope: dict, receive: Callable, send: Callable) -> None:
    """The runtime's MCP app; a request that arrives while the daemon is still starting waits
    for it."""
    handed = cast(MountParts, parts_in(scope))
    if handed.mcp.app is None:
        await handed.runtime.ready.wait()
    await handed.mcp.app(scope, receive, send)


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


application = MCPGuard(running_mcp_app)
