"""Writes for chat channels (ARCHITECTURE: each app's `services`): the outbox's rows
(channels_app/outbox.py) recorded, folded, marked delivered, postponed or failed, and swept.
Each is one short transaction, keyword-only, called through database_sync_to_async; the rows are
read in channels_app/outbox_rows.py."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction

from channels_app.models import OutboxMessage
from channels_app.outbox_rows import ERROR_MAX
from channels_app.platform import Buttons

KEEP_SENT = timedelta(days=1)  # delivered rows, kept to be edited (a long turn's answer)
KEEP_FAILED = timedelta(days=7)  # failed rows, kept to be shown


@transaction.atomic
def outbox_message_record(
    *, channel: str, chat: str, text: str, buttons: Buttons | None, now: datetime
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
def outbox_message_fold(*, row_id: int, text: str, buttons: Buttons | None, now: datetime) -> bool:
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


@transaction.atomic
def outbox_message_delivered(
    *, row_id: int, version: int, message_id: str, attempts: int, now: datetime
) -> bool:
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


@transaction.atomic
def outbox_message_postpone(
    *, row_id: int, attempts: int, error: str, next_at: datetime, now: datetime
) -> None:
    OutboxMessage.objects.filter(pk=row_id).update(
        attempts=attempts, error=error, next_at=next_at, updated_at=now
    )


@transaction.atomic
def outbox_message_fail(*, row_id: int, attempts: int, error: str, now: datetime) -> None:
    OutboxMessage.objects.filter(pk=row_id).update(
        status=OutboxMessage.FAILED, attempts=attempts, error=error[:ERROR_MAX], updated_at=now
    )


@transaction.atomic
def outbox_sweep(*, channel: str, now: datetime) -> None:
    """Delivered rows older than a day (nothing edits them any more) and failed rows older
    than a week go."""
    old = OutboxMessage.objects.filter(channel=channel)
    old.filter(status=OutboxMessage.SENT, updated_at__lt=now - KEEP_SENT).delete()
    old.filter(status=OutboxMessage.FAILED, updated_at__lt=now - KEEP_FAILED).delete()
