"""The MCP tools agents call (contract §4). Each tool is a thin adapter over a service; domain
errors become tool errors (`isError: true`) in one place, `call`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired, TypedDict, cast

from asgiref.sync import sync_to_async
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from core.errors import DomainError
from mcp_app import parts, tools_sessions, tools_subagents, tools_workspace

mcp = MCPServer(
    "svc",
    instructions=(
        "svc hosts coding-agent sessions on this machine. get_session_id tells you your svc "
        "session; prepare_handover gives the user a code to continue your session elsewhere; "
        "register_workspace records a project folder; initialize_subagents hands parts of a task "
        "to other agents (parallel, collaboration or brainstorming) and wait_for_subagents "
        "collects their reports; preview shows the user a dev server (with a 600 s share "
        "link), md_preview a rendered Markdown file."
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


@functools.cache
def _off_loop(service: Callable[..., Any]) -> Callable[..., Any]:
    """One asgiref wrapper per service, made once: building it inspects the function (7 µs a
    call on the bench machine), and the tools run the same few services over and over."""
    return sync_to_async(service)


async def call(service: Callable[..., Any], **kwargs: Any) -> Any:
    """Run a (synchronous) service off the event loop; its refusal is the agent's tool error."""
    try:
        return await _off_loop(service)(**kwargs)
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
        host=parts.of(ctx).host,
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
    local_share_url: str | None
    share_expires_at: str | None
    # Only when nothing listens on the port yet (the preview is made all the same).
    warning: NotRequired[str]


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
    share URL anyone can open for 600 s (read-only). `warning` says when nothing listens on
    the port yet: start the server there, or check the port."""
    links = await call(
        tools_workspace.preview_publish,
        port=port,
        file=None,
        cwd=cwd,
        title=title,
        session_id=session_id or _header(ctx, "x-svc-session-id"),
        online=parts.of(ctx).public_urls,
    )
    made: PreviewLinks = {
        "slug": links["slug"],
        "owner_url": links["owner_url"],
        "share_url": links.get("share_url"),
        "local_share_url": links.get("local_share_url"),
        "share_expires_at": links.get("share_expires_at"),
    }
    if links.get("warning"):
        made["warning"] = str(links["warning"])
    return made


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
        online=parts.of(ctx).public_urls,
    )
    return {"slug": links["slug"], "owner_url": links["owner_url"]}


class SubagentSpec(TypedDict, total=False):
    name: Annotated[str, Field(description="unique in the turn; names its git branch")]
    agent: Annotated[str, Field(description="an svc agent, e.g. claude, codex, gemini")]
    task: str
    profile_id: str


class SubagentInfo(TypedDict):
    id: str
    name: str
    agent: str
    session_id: str | None
    status: str
    workspace: str
    branch: str


class TurnInfo(TypedDict):
    turn_id: str
    mode: str
    subagents: list[SubagentInfo]


class SubagentReport(TypedDict):
    id: str
    name: str
    agent: str
    status: str
    summary: str
    report: Any
    final_message: str
    changes: dict[str, Any] | None
    session_id: str | None
    workspace: str


class TurnReports(TypedDict):
    turn_id: str
    mode: str
    status: str
    completed: bool
    timed_out: bool
    reports: list[SubagentReport]


@mcp.tool()
async def initialize_subagents(
    ctx: Context,
    mode: Literal["parallel", "collaboration", "brainstorming"],
    cwd: str,
    agents: list[SubagentSpec],
    task: str | None = None,
) -> TurnInfo:
    """Hand parts of your task to 1–8 other agents and return at once; collect their reports
    with wait_for_subagents. parallel: each works on its own task at the same time in its own
    git worktree (branch svc/{turn}/{name}, from your HEAD); collaboration: one after another
    on the shared task in one worktree, each seeing the reports before it; brainstorming: all
    answer the same task at once, read-only."""
    info = await call(
        tools_subagents.initialize, mode=mode, cwd=cwd, agents=[dict(a) for a in agents],
        task=task, header_session_id=_header(ctx, "x-svc-session-id"),
    )  # fmt: skip
    parts.of(ctx).subagents.start(info["turn_id"])
    return info


@mcp.tool()
async def wait_for_subagents(ctx: Context, turn_id: str, timeout_s: float = 600) -> TurnReports:
    """Wait for a subagent turn to end and return every report (final message, its parsed
    <svc-report> JSON, a one-line summary, and the changes svc measured with git). At the
    timeout it returns what is known with timed_out: true; call again to keep waiting."""
    await call(tools_subagents.check_wait, turn_id=turn_id, timeout_s=timeout_s)
    beats = 0

    async def progress(snapshot: dict[str, Any]) -> None:
        nonlocal beats
        ended, total, line = tools_subagents.progress_line(snapshot)
        beats += 1  # MCP progress must grow with every notification, heartbeats included
        await ctx.report_progress(ended + min(beats, 999) / 1000, total, line)

    snapshot = await parts.of(ctx).subagents.wait(turn_id, timeout_s, progress)
    return cast(TurnReports, tools_subagents.reports(snapshot))  # that shape, built there
