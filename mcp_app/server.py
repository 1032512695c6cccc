"""The MCP tools agents call (SPEC §4). Each tool is a thin adapter over a service; domain
errors become tool errors (`isError: true`) in one place, `call`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from asgiref.sync import sync_to_async
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from mcp_app import tools_sessions, tools_workspace
from svcproject.errors import DomainError

mcp = MCPServer(
    "svc",
    instructions=(
        "svc hosts coding-agent sessions on this machine. get_session_id tells you your svc "
        "session; prepare_handover gives the user a code to continue your session elsewhere; "
        "register_workspace records a project folder; preview shows the user a dev server "
        "(with a 600 s share link), md_preview a rendered Markdown file."
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


async def call(service: Callable[..., Any], **kwargs: Any) -> Any:
    """Run a (synchronous) service off the event loop; its refusal is the agent's tool error."""
    try:
        return await sync_to_async(service)(**kwargs)
    except DomainError as exc:
        raise ToolError(exc.message) from exc


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
    return await call(
        tools_sessions.resolve_session,
        session_id=session_id, header_session_id=header, agent=agent, cwd=cwd,
    )  # fmt: skip


class HandoverInfo(TypedDict):
    code: str
    expires_at: str
    expires_in: int
    pickup: str


@mcp.tool()
async def prepare_handover(
    ctx: Context, session_id: str | None = None, cwd: str | None = None
) -> HandoverInfo:
    """A 4-character code (valid 120 s, once) that lets the user pick your session up on
    another device: the dashboard's Pick up box, `manage.py pickup CODE`, or `/pickup CODE` in
    a chat. Defaults to your own session."""
    return await call(
        tools_sessions.prepare_handover,
        session_id=session_id, header_session_id=_header(ctx, "x-svc-session-id"), cwd=cwd,
    )  # fmt: skip


class WorkspaceInfo(TypedDict):
    workspace_id: int
    path: str
    name: str
    created: bool


class PreviewLinks(TypedDict):
    slug: str
    owner_url: str
    share_url: str | None
    share_expires_at: str | None


class MarkdownLinks(TypedDict):
    slug: str
    owner_url: str


@mcp.tool()
async def register_workspace(cwd: str, name: str | None = None) -> WorkspaceInfo:
    """Record `cwd` (an existing directory) as an svc workspace; calling it again is harmless."""
    return await call(tools_workspace.workspace_register, cwd=cwd, name=name)


@mcp.tool()
async def preview(
    ctx: Context,
    port: Annotated[int, Field(ge=1, le=65535)],
    cwd: str | None = None,
    title: str | None = None,
    session_id: str | None = None,
) -> PreviewLinks:
    """Show the user the dev server listening on `port` on this machine: an owner URL, and a
    share URL anyone can open for 600 s (read-only)."""
    links = await call(
        tools_workspace.preview_publish,
        port=port,
        file=None,
        cwd=cwd,
        title=title,
        session_id=session_id or _header(ctx, "x-svc-session-id"),
    )
    return {
        "slug": links["slug"],
        "owner_url": links["owner_url"],
        "share_url": links.get("share_url"),
        "share_expires_at": links.get("share_expires_at"),
    }


@mcp.tool()
async def md_preview(
    ctx: Context, file: str, cwd: str | None = None, title: str | None = None
) -> MarkdownLinks:
    """Show the user a Markdown file rendered (it refreshes when the file changes). `file` must
    lie inside `cwd` or a registered workspace."""
    links = await call(
        tools_workspace.preview_publish,
        port=None,
        file=file,
        cwd=cwd,
        title=title,
        session_id=_header(ctx, "x-svc-session-id"),
    )
    return {"slug": links["slug"], "owner_url": links["owner_url"]}
