"""Reads: sessions, workspaces, agents, channels, tunnels and the live-list snapshots."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from sessions_app.models import Agent, Session, SessionDict, Workspace

SESSION_FILTERS = ("live", "exited")


def session_list_dicts(*, status: str = "", q: str = "") -> list[SessionDict]:
    """Newest first. `status`: `live` (starting, running) or `exited` (exited, failed); `q`:
    text in the title, agent or workspace, or the start of the id (case-insensitive)."""
    from django.db.models import Q

    from svcproject.errors import DomainError

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
    found = [str(pk) for pk in Session.objects.values_list("pk", flat=True)
             if str(pk).startswith(prefix)][:2]  # fmt: skip
    return found[0] if len(found) == 1 else ""


def session_events(session_id: str) -> list[dict[str, Any]]:
    """A chat session's stored events in order, shaped as /ws/chat sends them."""
    from sessions_app.models import SessionEvent

    return [
        {**e.payload, "kind": e.kind, "session_id": session_id, "seq": e.seq}
        for e in SessionEvent.objects.filter(session_id=session_id).order_by("seq")
    ]


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


def _services(list_name: str) -> list[dict[str, Any]]:
    from svcproject.runtime import current_or_none

    runtime = current_or_none()
    return runtime.supervisor.statuses(list_name) if runtime is not None else []


def _with_service_status(rows: list[dict[str, Any]], list_name: str) -> list[dict[str, Any]]:
    """A row whose supervised service runs shows that service's status and detail (§12)."""
    running = {s["name"]: s for s in _services(list_name)}
    for row in rows:
        if (service := running.get(row.get("name", ""))) is not None:
            row.update(status=service["status"], detail=service["detail"])
    return rows


def channel_list_dicts() -> list[dict[str, Any]]:
    """`web` and each declared channel, with its service's status (contract §14)."""
    from channels_app.service import channel_rows
    from svcproject import config
    from svcproject.runtime import current_or_none

    return channel_rows(current_or_none(), config.current_settings())


def tunnel_list_dicts() -> list[dict[str, Any]]:
    """Declared tunnels with their service's status and public URL (contract §13)."""
    from remote_app.tunnels.service import tunnel_rows
    from svcproject import config
    from svcproject.runtime import current_or_none

    return tunnel_rows(current_or_none(), config.current_settings())


def agents_runtime_dicts() -> list[dict[str, Any]]:
    """Live ACP sessions as the process host sees them (busy, current turn, agent info), then
    the supervised services shown on this list, with their status."""
    from svcproject.runtime import current_or_none

    runtime = current_or_none()
    if runtime is None:
        return []
    return [*runtime.host.activity.snapshot(), *_services("agents_runtime")]
