"""Session lookups for MCP tools, raising ToolError with a message that says what to send."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from sessions_app import selectors
from sessions_app.models import Session


def _info(session: Session) -> dict[str, Any]:
    return {
        "session_id": str(session.id),
        "agent": session.agent,
        "workspace": session.workspace,
        "kind": session.kind,
        "status": session.status,
    }


def resolve_session(
    *, session_id: str | None, header_session_id: str | None, agent: str | None, cwd: str | None
) -> dict[str, Any]:
    if session_id:
        session = selectors.session_get(session_id)
        if session is None:
            raise ToolError(f"No svc session {session_id!r}. Pass an existing session_id.")
        return _info(session)
    if header_session_id:
        session = selectors.session_get(header_session_id)
        if session is not None:
            return _info(session)
    if agent and cwd:
        session = selectors.session_newest_live(agent=agent, workspace=cwd)
        if session is not None:
            return _info(session)
    raise ToolError(
        "Cannot tell which session you are. Pass session_id (the SVC_SESSION_ID environment "
        "variable), or both agent and cwd of a running svc session."
    )
