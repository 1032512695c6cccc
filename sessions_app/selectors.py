"""Reads: sessions, workspaces, agents, channels, tunnels and the live-list snapshots."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from sessions_app.models import Agent, Channel, Session, SessionDict, Tunnel, Workspace


def session_list_dicts() -> list[SessionDict]:
    return [s.to_dict() for s in Session.objects.all()]


def session_get(session_id: str) -> Session | None:
    try:
        return Session.objects.get(pk=session_id)
    except (Session.DoesNotExist, ValidationError, ValueError):
        return None


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


def channel_list_dicts() -> list[dict[str, Any]]:
    return [c.to_dict() for c in Channel.objects.all()]


def tunnel_list_dicts() -> list[dict[str, Any]]:
    return [t.to_dict() for t in Tunnel.objects.all()]


def agents_runtime_dicts() -> list[dict[str, Any]]:
    """Live ACP sessions as the process host sees them (busy, current turn, agent info)."""
    from sessions_app.host import runtime

    return runtime.snapshot()
