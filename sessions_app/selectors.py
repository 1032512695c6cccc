"""Reads: sessions, workspaces, agents, channels, tunnels and the live-list snapshots."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, models
from django.db.models import Max, Q

from core.errors import DomainError
from sessions_app.models import Agent, Approval, Session, SessionDict, SessionEvent, Workspace

SESSION_FILTERS = ("live", "exited")


def session_list_dicts(*, status: str = "", q: str = "") -> list[SessionDict]:
    """Newest first. `status`: `live` (starting, running) or `exited` (exited, failed); `q`:
    text in the title, agent or workspace, or the start of the id (case-insensitive)."""
    rows = Session.objects.all()
    if status == "live":
        rows = rows.filter(status__in=Session.LIVE)
    elif status == "exited":
        rows = rows.exclude(status__in=Session.LIVE)
    elif status:
        raise DomainError(f"status must be one of {', '.join(SESSION_FILTERS)}, got {status!r}")
    if text := q.strip():
        match = Q(title__icontains=text) | Q(agent__icontains=text) | Q(workspace__icontains=text)
        if all(c in "0123456789abcdef-" for c in text.lower()):
            prefix = text.lower()
            ids = [pk for pk in rows.values_list("pk", flat=True) if str(pk).startswith(prefix)]
            match |= Q(pk__in=ids)
        rows = rows.filter(match)
    return [s.to_dict() for s in rows]


def session_get(session_id: str) -> Session | None:
    try:
        return Session.objects.get(pk=session_id)
    except (Session.DoesNotExist, ValidationError, ValueError):
        return None


def session_id_resolve(given: str) -> str:
    """A session id from the id itself or a unique prefix of at least 4 characters (what the
    dashboard and `manage.py sessions` print); "" when there is none or it is ambiguous."""
    if session_get(given) is not None:
        return given
    prefix = given.strip().lower()
    if len(prefix) < 4 or any(c not in "0123456789abcdef-" for c in prefix):
        return ""
    found = [
        str(pk) for pk in Session.objects.values_list("pk", flat=True) if str(pk).startswith(prefix)
    ][:2]
    return found[0] if len(found) == 1 else ""


def session_events(
    session_id: str, *, after: int = 0, limit: int | None = None
) -> list[dict[str, Any]]:
    """A chat session's stored events in order (those after seq `after`, the first `limit`),
    shaped as /ws/chat sends them."""
    stored = SessionEvent.objects.filter(session_id=session_id, seq__gt=after).order_by("seq")
    if limit is not None:
        stored = stored[:limit]
    return [{**e.payload, "kind": e.kind, "session_id": session_id, "seq": e.seq} for e in stored]


def session_event(session_id: str, seq: int) -> dict[str, Any] | None:
    """One stored event, whole (what a truncated /ws/chat event points to)."""
    found = session_events(session_id, after=seq - 1, limit=1)
    return found[0] if found and found[0]["seq"] == seq else None


def session_last_seq(session_id: str) -> int:
    last = SessionEvent.objects.filter(session_id=session_id).aggregate(m=Max("seq"))["m"]
    return int(last or 0)


APPROVALS_LIMIT = 1000


@dataclass
class ChatPosition:
    """Where a chat's stored history stands (host/acp_link.py), for taking it back."""

    stored_upto: int = -1  # the offset of the last agent message an event was stored from
    in_turn: bool = False  # a prompt after the last turn's end
    # Permission requests of the agent's, by their offset: asked and not yet decided (the
    # stored request event), and decided (the stored decision: the agent may not have had it).
    asked: dict[int, dict[str, Any]] = field(default_factory=dict)
    decided: dict[int, dict[str, Any]] = field(default_factory=dict)


def chat_position(session_id: str) -> ChatPosition:
    events = SessionEvent.objects.filter(session_id=session_id)
    marks = events.aggregate(
        src=Max("src"),
        prompt=Max("seq", filter=models.Q(kind="user_message_chunk")),
        end=Max("seq", filter=models.Q(kind="turn_end")),
    )
    position = ChatPosition(
        stored_upto=marks["src"] if marks["src"] is not None else -1,
        in_turn=(marks["prompt"] or 0) > (marks["end"] or 0),
    )
    permissions = events.filter(
        src__isnull=False, kind__in=("permission_request", "permission_resolved")
    )
    for event in permissions.order_by("seq"):
        if event.kind == "permission_resolved":
            position.asked.pop(event.src, None)
            position.decided[event.src] = event.payload
        else:
            position.asked[event.src] = {**event.payload, "seq": event.seq}
    return position


def approval_list_dicts(
    *, session_id: str = "", since: datetime | None = None, limit: int = 200
) -> list[dict[str, Any]]:
    """Permission decisions, newest first (contract §17): of one session, decided at or after
    `since`, at most `limit` (1…APPROVALS_LIMIT)."""
    if not 1 <= limit <= APPROVALS_LIMIT:
        raise DomainError(f"limit must be between 1 and {APPROVALS_LIMIT}, got {limit}")
    rows = Approval.objects.all()
    if session_id:
        rows = rows.filter(session_id=session_id)
    if since is not None:
        rows = rows.filter(decided_at__gte=since)
    return [a.to_dict() for a in rows.order_by("-decided_at", "-seq")[:limit]]


def session_newest_live(*, workspace: str, agent: str | None = None) -> Session | None:
    """The newest live session in `workspace` (of `agent`, when given)."""
    live = Session.objects.filter(workspace=workspace, status__in=Session.LIVE)
    if agent:
        live = live.filter(agent=agent)
    return live.order_by("-created_at").first()


def workspace_list() -> list[Workspace]:
    return list(Workspace.objects.all())


def agent_list() -> list[Agent]:
    return list(Agent.objects.all())


def agent_get(name: str) -> Agent | None:
    return Agent.objects.filter(name=name).first()


def agents_runtime_dicts(runtime: Any) -> list[dict[str, Any]]:
    """Live ACP sessions as the process host sees them (busy, current turn, agent info), then
    the supervised services shown on this list, with their status."""
    if runtime is None:
        return []
    return [*runtime.host.activity.snapshot(), *runtime.supervisor.statuses("agents_runtime")]


# get_session_id (mcp_app/tools_sessions.py): the read every agent makes.
def session_info_of(session: Session) -> dict[str, Any]:
    return {
        "session_id": str(session.id),
        "agent": session.agent,
        "workspace": session.workspace,
        "kind": session.kind,
        "status": session.status,
    }


_INFO_FIELDS = ("id", "agent", "workspace", "kind", "status")


@functools.cache
def _info_statement(vendor: str) -> str:
    """The SQL Django compiles for `Session.objects.filter(pk=…).values_list(<the five>)`, made
    once per database backend. Compiling it is most of the ORM's cost for this read (~200 µs of
    a ~210 µs `get` on the bench machine; the statement itself runs in ~20 µs), and
    get_session_id is the call every agent makes; the text is Django's own, so it follows the
    model's columns and the backend's quoting."""
    query = Session.objects.filter(pk=uuid.UUID(int=0)).order_by().values_list(*_INFO_FIELDS).query
    return query.sql_with_params()[0]


def session_info(session_id: str) -> dict[str, Any] | None:
    """session_info_of() the session with this id, or None: read with the statement above."""
    try:
        key = Session._meta.pk.get_db_prep_value(uuid.UUID(str(session_id)), connection)
    except (ValueError, TypeError, AttributeError):
        return None
    with connection.cursor() as cursor:
        cursor.execute(_info_statement(connection.vendor), [key])
        row = cursor.fetchone()
    if row is None:
        return None
    pk, agent, workspace, kind, status = row
    return {"session_id": str(uuid.UUID(str(pk))), "agent": agent, "workspace": workspace,
            "kind": kind, "status": status}  # fmt: skip
