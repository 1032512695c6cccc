"""Reads: sessions, workspaces, agents, channels, tunnels and the live-list snapshots."""

from __future__ import annotations

import copy
from typing import Any

from django.core.exceptions import ValidationError

from sessions_app.models import Agent, Channel, Session, SessionDict, Tunnel, Workspace
from svcproject import config

REDACTED = "[redacted]"


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


def settings_redacted() -> dict[str, Any]:
    """settings.json as the API shows it: every profile's literal key replaced by a marker."""
    shown = copy.deepcopy(config.current_settings().raw)
    for profile in (shown.get("profiles") or {}).values():
        if isinstance(profile, dict) and profile.get("api_key"):
            profile["api_key"] = REDACTED
    return shown


def session_newest_live(*, agent: str, workspace: str) -> Session | None:
    return (
        Session.objects.filter(agent=agent, workspace=workspace, status__in=Session.LIVE)
        .order_by("-created_at")
        .first()
    )


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
