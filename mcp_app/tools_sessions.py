"""Session tools: who the caller is, and handing its session over. Refusals are DomainErrors
with a message that says what to send instead (mcp_app.server turns them into tool errors)."""

from __future__ import annotations

from typing import Any

from core.errors import DomainError, NotFound
from sessions_app import selectors, services
from sessions_app.host.registry import ProcessHost
from sessions_app.models import Session


def _no_such_session(session_id: str) -> NotFound:
    return NotFound(f"No svc session {session_id!r}. Pass an existing session_id.")


def _caller(
    *, session_id: str | None, header_session_id: str | None, agent: str | None, cwd: str | None
) -> Session:
    if session_id:
        session = selectors.session_get(session_id)
        if session is None:
            raise _no_such_session(session_id)
        return session
    if header_session_id and (session := selectors.session_get(header_session_id)):
        return session
    if cwd and (session := selectors.session_newest_live(agent=agent, workspace=cwd)):
        return session
    raise DomainError(
        "Cannot tell which session you are. Pass session_id (the SVC_SESSION_ID environment "
        "variable), or the agent and cwd of a running svc session."
    )


def resolve_session(
    *, session_id: str | None, header_session_id: str | None, agent: str | None, cwd: str | None
) -> dict[str, Any]:
    """get_session_id: a workspace alone is not enough, it takes the agent too (contract §4)."""
    if session_id:
        if (info := selectors.session_info(session_id)) is None:
            raise _no_such_session(session_id)
        return info
    if header_session_id and (info := selectors.session_info(header_session_id)):
        return info
    cwd = cwd if agent else None
    return selectors.session_info_of(
        _caller(session_id=None, header_session_id=None, agent=agent, cwd=cwd)
    )


def prepare_handover(
    *, session_id: str | None, header_session_id: str | None, cwd: str | None, host: ProcessHost
) -> dict[str, Any]:
    session = _caller(
        session_id=session_id, header_session_id=header_session_id, agent=None, cwd=cwd
    )
    return services.handover_offer(session_id=str(session.id), host=host)
