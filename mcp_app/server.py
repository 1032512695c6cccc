"""The MCP tools agents call (SPEC §4). Each tool is a thin adapter over a service."""

from __future__ import annotations

from typing import TypedDict

from asgiref.sync import sync_to_async
from mcp.server.mcpserver import Context, MCPServer

from mcp_app import tools_sessions

mcp = MCPServer(
    "svc",
    instructions=(
        "svc hosts coding-agent sessions on this machine. Use get_session_id to learn your own "
        "session, prepare_handover to hand it to the user, preview/md_preview to show work."
    ),
    log_level="WARNING",
)


class SessionInfo(TypedDict):
    session_id: str
    agent: str
    workspace: str
    kind: str
    status: str


def _header(ctx: Context, name: str) -> str | None:
    request = getattr(ctx.request_context, "request", None)
    return request.headers.get(name) if request is not None else None


@mcp.tool()
async def get_session_id(
    ctx: Context,
    session_id: str | None = None,
    agent: str | None = None,
    cwd: str | None = None,
) -> SessionInfo:
    """Your own svc session: explicit session_id, else the X-Svc-Session-Id header your config
    sends, else the newest live session of `agent` in `cwd`."""
    header = _header(ctx, "x-svc-session-id")
    return await sync_to_async(tools_sessions.resolve_session)(
        session_id=session_id, header_session_id=header, agent=agent, cwd=cwd
    )
