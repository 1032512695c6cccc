"""bench/mcp_calls.py's peer: a bare `MCPServer` with svc's tools (same names, descriptions,
input and output schemas; bench/mcp_calls.py checks that against svc's own `tools/list`), served
by the SDK's streamable-HTTP app alone, stateless like svc, with nothing of svc's around it: no
Django, no router, no guard, no admission, no access log. Like svc, it freezes what it loaded at
start out of the garbage collector's reach (the end of this module).

Its `get_session_id` does the tool's work the least way it can be done: one read of the session
row from the same SQLite file, by primary key, with the standard library, on the event loop (a
20 µs read from a warm connection; Django's ORM may not run there, which is why svc's tools hop to
a thread). The other tools are there for `tools/list` only; the bench does not call them.

    daphne -b 127.0.0.1 -p PORT bench.support.mcp_peer:daphne_app
    uvicorn --host 127.0.0.1 --port PORT --no-access-log bench.support.mcp_peer:app

`SVC_HOME` names the database (the svc daemon's own, read-only here).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field

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

_conn: list[sqlite3.Connection] = []


def _db() -> sqlite3.Connection:
    """One read-only connection, opened once (only the event loop's thread uses it)."""
    if not _conn:
        path = Path(os.environ["SVC_HOME"]) / "db.sqlite3"
        _conn.append(sqlite3.connect(f"file:{path}?mode=ro", uri=True))
    return _conn[0]


def _session_row(session_id: str) -> dict[str, Any] | None:
    with contextlib.suppress(ValueError):
        key = uuid.UUID(session_id).hex
        row = (
            _db()
            .execute(
                "SELECT id, agent, workspace, kind, status FROM sessions_app_session WHERE id = ?",
                (key,),
            )
            .fetchone()
        )
        if row is not None:
            sid, agent, workspace, kind, status = row
            return {"session_id": str(uuid.UUID(sid)), "agent": agent, "workspace": workspace,
                    "kind": kind, "status": status}  # fmt: skip
    return None


class SessionInfo(TypedDict):
    session_id: str
    agent: str
    workspace: str
    kind: str
    status: str


@mcp.tool()
async def get_session_id(
    ctx: Context,
    session_id: str | None = None,
    agent: str | None = None,
    cwd: str | None = None,
) -> SessionInfo:
    """Your own svc session: explicit session_id, else the X-Svc-Session-Id header your config
    sends, else the newest live session of `agent` in `cwd`."""
    found = _session_row(session_id or "")
    if found is None:
        raise ToolError(f"No svc session {session_id!r}. Pass an existing session_id.")
    return found  # type: ignore[return-value]


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
    raise ToolError("not in the bench")


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
    raise ToolError("not in the bench")


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
    raise ToolError("not in the bench")


@mcp.tool()
async def md_preview(
    ctx: Context, file: str, cwd: str | None = None, title: str | None = None
) -> MarkdownLinks:
    """Show the user a Markdown file rendered (it refreshes when the file changes). `file` must
    lie inside `cwd` or a registered workspace."""
    raise ToolError("not in the bench")


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
    raise ToolError("not in the bench")


@mcp.tool()
async def wait_for_subagents(ctx: Context, turn_id: str, timeout_s: float = 600) -> TurnReports:
    """Wait for a subagent turn to end and return every report (final message, its parsed
    <svc-report> JSON, a one-line summary, and the changes svc measured with git). At the
    timeout it returns what is known with timed_out: true; call again to keep waiting."""
    raise ToolError("not in the bench")


# svc's own Host/Origin rules (mcp_app.asgi), so both check the same headers the same way.
_SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)

# uvicorn runs the app's lifespan, which starts the session manager.
app = mcp.streamable_http_app(
    streamable_http_path="/mcp", stateless_http=True, json_response=False,
    transport_security=_SECURITY,
)  # fmt: skip


class _StartOnFirstRequest:
    """daphne runs no ASGI lifespan (as for svc, whose runtime starts the manager at bind): the
    session manager is started by the first request and runs until the process ends."""

    def __init__(self) -> None:
        self.ready: asyncio.Event | None = None
        self.task: asyncio.Task | None = None

    async def _run(self) -> None:
        assert self.ready is not None
        async with mcp.session_manager.run():
            self.ready.set()
            await asyncio.Future()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if self.ready is None:
            self.ready = asyncio.Event()
            self.task = asyncio.ensure_future(self._run())
        await self.ready.wait()
        await app(scope, receive, send)


daphne_app = _StartOnFirstRequest()

# What svc does once started (svcproject.startup.freeze_startup_objects): the objects loaded at
# start no longer walked by every full collection. Without it the bare server's c=16 p99 was
# ~100 ms against svc's ~30 ms and its tools/list cost ~20 % more CPU: the comparison would
# credit svc's code with what one call at start buys any server.
gc.collect()
gc.freeze()
