"""The channels' reads and writes (sync: called through database_sync_to_async)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from channels_app.models import ChannelChat, HandledEvent
from core import row_seal
from sessions_app.models import Session, SessionEvent

INBOX = "channel inbox event"


def chat_session_get(channel: str, chat: str) -> str:
    row = ChannelChat.objects.filter(channel=channel, chat_key=chat).first()
    return row.session_id if row else ""


def chat_session_set(channel: str, chat: str, session_id: str) -> None:
    ChannelChat.objects.update_or_create(
        channel=channel,
        chat_key=chat,
        defaults={"session_id": session_id, "updated_at": timezone.now()},
    )


def event_take(channel: str, event_id: str, payload: dict[str, Any] | None = None) -> str:
    """Record a platform event as taken in: "new" the first time; "unfinished" when a run
    took it before and never handed it over (it stopped first); "handled" when it is done or
    failed. An event without an id is always "new"."""
    if not event_id:
        return "new"
    if payload is not None:  # what a replay may hand over: sealed, so only svc's own is
        payload = {**payload, "seal": row_seal.seal(INBOX, channel, event_id, payload)}
    try:
        with transaction.atomic():
            HandledEvent.objects.create(channel=channel, event_id=event_id, payload=payload)
    except IntegrityError:
        found = HandledEvent.objects.filter(channel=channel, event_id=event_id).first()
        return "unfinished" if found and found.status == HandledEvent.TAKEN else "handled"
    return "new"


def event_done(channel: str, event_id: str) -> None:
    """Handed over: a copy delivered again, or a replay, leaves it alone."""
    if event_id:
        HandledEvent.objects.filter(channel=channel, event_id=event_id).update(
            status=HandledEvent.DONE, payload=None
        )


def events_unfinished(channel: str, before: Any) -> list[dict[str, Any]]:
    """What a previous run took in and never handed over, oldest first: for the replay. Only
    what svc recorded: a row written into the database (a message "from" an allowed user) is
    recorded failed, logged, and never handed over."""
    rows = HandledEvent.objects.filter(
        channel=channel, status=HandledEvent.TAKEN, at__lt=before, payload__isnull=False
    ).order_by("at", "id")
    left = []
    for row in rows:
        payload = dict(row.payload) if isinstance(row.payload, dict) else {}
        given = payload.pop("seal", None)
        if row_seal.sealed(INBOX, given, channel, row.event_id, payload):
            left.append({"event_id": row.event_id, **payload})
            continue
        row_seal.refused(INBOX, f"{channel}/{row.event_id}", "never handed to an agent")
        event_failed(channel, row.event_id, "not recorded by svc (its seal does not verify)")
    return left


def event_failed(channel: str, event_id: str, error: str) -> None:
    """Record that handling this event failed, and why. It may not have been taken yet (it
    failed before that): recording it now still keeps a redelivered copy from being handled."""
    if not event_id:
        return
    HandledEvent.objects.update_or_create(
        channel=channel,
        event_id=event_id,
        defaults={"status": HandledEvent.FAILED, "error": error[:500]},
    )


def chat_sessions(channel: str, chat: str) -> list[dict[str, Any]]:
    """The chat sessions this chat has been on, newest first (the current one included)."""
    current = chat_session_get(channel, chat)
    title = f"{channel} chat"
    rows = Session.objects.filter(kind="chat", title=title).order_by("-created_at")[:20]
    found = [{"id": str(s.id), "agent": s.agent, "status": s.status} for s in rows]
    if current and current not in {r["id"] for r in found}:
        session = Session.objects.filter(pk=current).first()
        if session is not None:
            found.insert(0, {"id": current, "agent": session.agent, "status": session.status})
    return found


def history_summary(session_id: str, turns: int = 3) -> str:
    """The last few prompts and answers of a session, shortened: what a chat picking it up sees."""
    events = SessionEvent.objects.filter(
        session_id=session_id, kind__in=["user_message_chunk", "agent_message_chunk", "turn_end"]
    ).order_by("seq")
    exchanges: list[list[str]] = [["", ""]]
    for event in events:
        text = str(event.payload.get("text", ""))
        if event.kind == "user_message_chunk":
            exchanges[-1][0] += text
        elif event.kind == "agent_message_chunk":
            exchanges[-1][1] += text
        elif exchanges[-1] != ["", ""]:
            exchanges.append(["", ""])
    done = [e for e in exchanges if e != ["", ""]][-turns:]
    lines = []
    for asked, said in done:
        lines.append(f"› {asked.strip()[:200]}")
        if said.strip():
            lines.append(f"  {said.strip()[:400]}")
    return "\n".join(lines)
