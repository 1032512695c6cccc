"""The record of the prompts that wait for a chat (sessions_app/prompt_queue.py says when they are
sent): each write one transaction, keyword-only. A prompt is sealed when recorded
(sessions_app/seals.py); one svc did not record is never sent, counted or given room."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Max, Min
from django.utils import timezone

from core.errors import DomainError
from sessions_app import seals
from sessions_app.models import PromptKey, QueuedPrompt

# What may wait for one chat: prompt_queue shows each prompt's text up to its SHOWN_CHARS, so a
# `queue` event stays well under a WebSocket frame at QUEUE_MAX prompts.
QUEUE_MAX = 50
QUEUE_BYTES = 1 << 20  # UTF-8 bytes of the prompts waiting
KEY_DAYS = 2  # a member that restarts sends what it passed on again within minutes


def _waiting(session_id: str) -> list[QueuedPrompt]:
    return [r for r in QueuedPrompt.objects.filter(session_id=session_id) if seals.queued_sealed(r)]


class AlreadyReceived(Exception):
    """A prompt under a key this session already has: recorded before, not again."""


def queued_prompt_add(
    *,
    session_id: str,
    text: str,
    source: str,
    who: str,
    recorded: Callable[[], None] | None = None,
    key: str = "",
) -> QueuedPrompt:
    """Record a prompt last in its chat's queue, sealed, in one transaction with `recorded` (the
    caller's own record of the hand-over) and the client's `key`. AlreadyReceived: the key was
    recorded before; QueueFull: no room."""
    try:
        with transaction.atomic():
            if key:
                _keep_key(session_id, key)
            return _append(session_id, text, source, who, recorded)
    except IntegrityError:
        stored = seals.prompt_key(session_id, key) if key else ""
        if key and PromptKey.objects.filter(session_id=session_id, key=stored).exists():
            raise AlreadyReceived(key) from None  # the same key, sent twice at once
        raise


def _keep_key(session_id: str, key: str) -> None:
    # Stored sealed: a row written into the database cannot hold a real prompt's key.
    stored = seals.prompt_key(session_id, key)
    if PromptKey.objects.filter(session_id=session_id, key=stored).exists():
        raise AlreadyReceived(key)
    PromptKey.objects.filter(received_at__lt=timezone.now() - timedelta(days=KEY_DAYS)).delete()
    PromptKey.objects.create(session_id=session_id, key=stored)


class QueueFull(DomainError):
    status = 429
    code = "queue_full"


def _room_for(session_id: str, text: str) -> None:
    waiting = _waiting(session_id)
    size = sum(len(row.text.encode()) for row in waiting) + len(text.encode())
    if len(waiting) >= QUEUE_MAX or size > QUEUE_BYTES:
        raise QueueFull(
            f"this chat's queue is full ({len(waiting)} prompts wait, at most {QUEUE_MAX} and "
            f"{QUEUE_BYTES // 1024} KiB in all): remove one or wait for the running turn to end"
        )


def _append(
    session_id: str, text: str, source: str, who: str, recorded: Callable[[], None] | None
) -> QueuedPrompt:
    with transaction.atomic():
        _room_for(session_id, text)
        if recorded is not None:  # the caller's own record of the hand-over, in one step
            recorded()
        last = QueuedPrompt.objects.filter(session_id=session_id).aggregate(m=Max("position"))
        row = QueuedPrompt(
            session_id=session_id,
            position=(last["m"] or 0) + 1,
            text=text,
            source=source,
            who=who,
            created_at=timezone.now(),
        )
        row.seal = seals.queued_seal(row)
        row.save(force_insert=True)
        return row


def queued_prompt_take_first(*, session_id: str) -> QueuedPrompt | None:
    """The first waiting prompt, taken off the record; one svc did not record is dropped on the
    way, never sent."""
    with transaction.atomic():
        while True:
            row = QueuedPrompt.objects.filter(session_id=session_id).order_by("position").first()
            if row is None:
                return None
            if QueuedPrompt.objects.filter(pk=row.pk).delete()[0] == 0:
                return None  # removed meanwhile by someone else
            if seals.queued_sealed(row):
                return row


@transaction.atomic
def queued_prompt_remove(*, session_id: str, queued_id: int) -> bool:
    return QueuedPrompt.objects.filter(session_id=session_id, pk=queued_id).delete()[0] > 0


def queued_prompt_to_front(*, session_id: str, queued_id: int) -> bool:
    with transaction.atomic():
        rows = QueuedPrompt.objects.filter(session_id=session_id)
        first = rows.aggregate(m=Min("position"))["m"] or 0
        return rows.filter(pk=queued_id).update(position=first - 1) > 0


def queued_prompt_put_back(*, row: QueuedPrompt) -> None:
    """A prompt whose turn was refused before it reached the agent, first again."""
    with transaction.atomic():
        rows = QueuedPrompt.objects.filter(session_id=row.session_id)
        first = rows.aggregate(m=Min("position"))["m"]
        row.position = (row.position if first is None else first) - 1  # first again
        row.pk = None
        row.save()  # the same prompt, its seal with it
