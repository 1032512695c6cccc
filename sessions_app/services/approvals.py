"""The record of every permission decision (contract §17): an `Approval` row made from each
stored `permission_resolved` event (sessions_app/approvals.py says why there, and who decided)."""

from __future__ import annotations

from typing import Any

from sessions_app.approvals import when_parse
from sessions_app.models import Approval, Session, SessionEvent


def approval_create(*, event: SessionEvent) -> Approval | None:
    """The row for a stored `permission_resolved` event (None for any other event). Runs inside
    the event's transaction (records.session_event_append): a decision is recorded with its
    event, or neither is."""
    if event.kind != "permission_resolved":
        return None
    payload: dict[str, Any] = event.payload or {}
    asked = _request_event(event)
    request = asked.payload if asked is not None else {}
    tool_call = request.get("tool_call") or payload.get("tool_call") or {}
    by = payload.get("decided_by") or _decided_by_before_the_record(payload)
    decided_at = when_parse(payload.get("decided_at")) or event.created_at
    agent = Session.objects.filter(pk=event.session_id).values_list("agent", flat=True).first()
    title, kind = _title_and_kind(event, tool_call)
    return Approval.objects.create(
        session_id=event.session_id,
        request_id=str(payload.get("request_id") or ""),
        seq=event.seq,
        agent=agent or "",
        title=title,
        kind=kind,
        options=request.get("options") or payload.get("options") or [],
        # What the agent was answered with (a timeout answers the agent's reject option).
        chosen=payload.get("chosen", payload.get("option_id")),
        surface=by.get("surface") or "api",
        who=str(by.get("who") or ""),
        # Answered by policy: nobody was asked, so it was asked and decided at once.
        requested_at=asked.created_at if asked is not None else decided_at,
        decided_at=decided_at,
    )


def _request_event(event: SessionEvent) -> SessionEvent | None:
    request_id = (event.payload or {}).get("request_id")
    if not request_id:
        return None
    return (
        SessionEvent.objects.filter(
            session_id=event.session_id,
            kind="permission_request",
            payload__request_id=request_id,
            seq__lt=event.seq,
        )
        .order_by("-seq")
        .first()
    )


def _title_and_kind(event: SessionEvent, tool_call: dict[str, Any]) -> tuple[str, str]:
    """An agent often sends only the tool call's id with its request: the title and kind then
    come from the `tool_call` event that announced it."""
    title, kind = str(tool_call.get("title") or ""), str(tool_call.get("kind") or "")
    call_id = tool_call.get("toolCallId")
    if (not title or not kind) and call_id:
        announced = (
            SessionEvent.objects.filter(
                session_id=event.session_id, kind="tool_call", payload__toolCallId=call_id
            )
            .order_by("-seq")
            .values_list("payload", flat=True)
            .first()
        ) or {}
        title = title or str(announced.get("title") or "")
        kind = kind or str(announced.get("tool_kind") or "")
    return title, kind


def _decided_by_before_the_record(payload: dict[str, Any]) -> dict[str, str]:
    """An event stored without `decided_by` (only a journal written by an older svc could hold
    one): what its own fields say."""
    if payload.get("policy"):
        return {"surface": "policy", "who": str(payload["policy"])}
    if not payload.get("answered"):
        return {"surface": "cancelled", "who": "no answer"}
    return {"surface": "api", "who": ""}
