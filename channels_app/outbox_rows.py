"""The outbox's rows (channels_app/outbox.py): recorded, folded, read in order per chat, marked
delivered, postponed or failed, swept; and `summary`, what the channel lists show of them. Each
function is one short transaction, called through database_sync_to_async."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from channels_app.models import OutboxMessage
from channels_app.platform import Buttons

KEEP_SENT = timedelta(days=1)  # delivered rows, kept to be edited (a long turn's answer)
KEEP_FAILED = timedelta(days=7)  # failed rows, kept to be shown
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


def record(
    channel: str, chat: str, text: str, buttons: Buttons | None, now: datetime
) -> tuple[int, bool]:
    """The new row's id, and whether it waits behind a delivery that failed (the lists count
    it then)."""
    stored = None if buttons is None else [list(b) for b in buttons]
    pending = OutboxMessage.objects.filter(channel=channel, chat=chat, status=OutboxMessage.PENDING)
    blocked = pending.filter(attempts__gt=0).exists()
    row = OutboxMessage.objects.create(
        channel=channel,
        chat=chat,
        text=text,
        buttons=stored,
        created_at=now,
        pending_since=now,
        next_at=now,
        updated_at=now,
    )
    return row.pk, blocked


@transaction.atomic
def fold(row_id: int, text: str, buttons: Buttons | None, now: datetime) -> bool:
    """The row shows `text` from now on; False when nothing changed (or it failed: a message
    that never arrived has nothing to edit)."""
    row = OutboxMessage.objects.select_for_update().filter(pk=row_id).first()
    stored = None if buttons is None else [list(b) for b in buttons]
    if row is None or row.status == OutboxMessage.FAILED:
        return False
    if row.text == text and row.buttons == stored:
        return False
    row.text, row.buttons, row.version = text, stored, row.version + 1
    if row.status == OutboxMessage.SENT:  # shown: the edit is delivered from now on
        row.status, row.attempts, row.error = OutboxMessage.PENDING, 0, ""
        row.pending_since = row.next_at = now
    row.updated_at = now
    row.save()
    return True


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


def delivered(row_id: int, version: int, message_id: str, attempts: int, now: datetime) -> bool:
    """The platform shows the row's text as of `version`. An edit made meanwhile keeps it
    pending (now with the platform's id: delivered next as an edit). True: it was shown after
    failing before (the lists show it no longer waiting)."""
    rows = OutboxMessage.objects.filter(pk=row_id)
    done = rows.filter(version=version).update(
        status=OutboxMessage.SENT, message_id=message_id, error="", updated_at=now
    )
    if not done:
        rows.update(message_id=message_id, updated_at=now)
    return attempts > 1


def postponed(row_id: int, attempts: int, error: str, next_at: datetime, now: datetime) -> None:
    OutboxMessage.objects.filter(pk=row_id).update(
        attempts=attempts, error=error, next_at=next_at, updated_at=now
    )


def failed(row_id: int, attempts: int, error: str, now: datetime) -> None:
    OutboxMessage.objects.filter(pk=row_id).update(
        status=OutboxMessage.FAILED, attempts=attempts, error=error[:ERROR_MAX], updated_at=now
    )


def sweep(channel: str, now: datetime) -> None:
    """Delivered rows older than a day (nothing edits them any more) and failed rows older
    than a week go."""
    old = OutboxMessage.objects.filter(channel=channel)
    old.filter(status=OutboxMessage.SENT, updated_at__lt=now - KEEP_SENT).delete()
    old.filter(status=OutboxMessage.FAILED, updated_at__lt=now - KEEP_FAILED).delete()


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
