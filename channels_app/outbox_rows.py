"""The outbox's rows read (channels_app/outbox.py): in order per chat, and `summary`, what the
channel lists show of them. They are written (recorded, folded, marked delivered, postponed or
failed, swept) in channels_app/services.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from channels_app.models import OutboxMessage
from channels_app.platform import Buttons

SHOWN_FAILED = 20
ERROR_MAX = 300  # characters of an error kept and shown


@dataclass(frozen=True)
class Due:
    """A row as the deliverer reads it."""

    id: int
    chat: str
    text: str
    buttons: Buttons | None
    message_id: str
    version: int
    attempts: int
    next_at: datetime
    pending_since: datetime
    error: str


def buttons_in(value: Any) -> Buttons | None:
    return None if value is None else [(str(label), str(data)) for label, data in value]


def head(channel: str, chat: str) -> Due | None:
    row = (
        OutboxMessage.objects.filter(channel=channel, chat=chat, status=OutboxMessage.PENDING)
        .order_by("pending_since", "id")
        .first()
    )
    if row is None:
        return None
    return Due(
        id=row.pk,
        chat=row.chat,
        text=row.text,
        buttons=buttons_in(row.buttons),
        message_id=row.message_id,
        version=row.version,
        attempts=row.attempts,
        next_at=row.next_at,
        pending_since=row.pending_since,
        error=row.error,
    )


def heads(channel: str) -> list[Due]:
    """Each chat's first pending row: the one that goes next."""
    chats = (
        OutboxMessage.objects.filter(channel=channel, status=OutboxMessage.PENDING)
        .values_list("chat", flat=True)
        .distinct()
    )
    return [due for chat in list(chats) if (due := head(channel, chat)) is not None]


def summary(channel: str) -> dict[str, Any]:
    """What `/ws/channels` and `GET /api/channels` show of a channel's outbox: `pending`, the
    messages waiting behind a delivery that failed (a chat whose next message went through at
    its first try waits for nothing), `error`, the last such failure, and `failed`, the newest
    messages that were never delivered."""
    pending = list(
        OutboxMessage.objects.filter(channel=channel, status=OutboxMessage.PENDING)
        .order_by("pending_since", "id")
        .values("chat", "attempts", "error")
    )
    waiting, error, blocked = 0, "", set()
    for row in pending:
        if row["chat"] in blocked:
            waiting += 1
        elif row["attempts"]:  # the chat's next message failed: it and the rest wait
            blocked.add(row["chat"])
            waiting += 1
            error = error or row["error"]
    failed = OutboxMessage.objects.filter(channel=channel, status=OutboxMessage.FAILED)
    return {
        "pending": waiting,
        "error": error,
        "failed": [row.to_dict() for row in failed.order_by("-updated_at")[:SHOWN_FAILED]],
    }
