"""What the MCP tools read of the daemon's parts, which reach them in the ASGI scope of the
request that called them (svcproject.parts checks `Parts` against this; the /mcp mount's own
needs are mcp_app.asgi.MountParts)."""

from __future__ import annotations

from typing import Any, Protocol, cast

from mcp.server.mcpserver import Context

from core.asgi_helpers import parts_in
from sessions_app.host.registry import ProcessHost
from subagents_app.subagent_runs import SubagentRuns


class ToolParts(Protocol):
    @property
    def host(self) -> ProcessHost: ...
    @property
    def subagents(self) -> SubagentRuns: ...
    @property
    def public_urls(self) -> dict[str, str]: ...  # the online tunnels' (core.runtime.Reach)


def of(ctx: Context) -> ToolParts:
    """The parts in the scope of the HTTP request this tool call came in (the SDK keeps it as
    the request context's `request`, a Starlette Request over svc's scope)."""
    request: Any = ctx.request_context.request
    if request is None:
        raise RuntimeError("an MCP tool called outside an HTTP request has no svc parts")
    return cast(ToolParts, parts_in(request.scope))
