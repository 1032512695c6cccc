"""The notifier's rows (notifications_app/hub.py): a notification and its deliveries recorded in
one transaction, each delivery's attempts and end, what is due after a restart, and the sweep of
old notifications. Each function is one transaction, called through database_sync_to_async."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

if TYPE_CHECKING:
    from notifications_app.models import Notification, PushSubscription

KEEP = 1000  # notifications kept; older ones (and their deliveries) are deleted at start


@transaction.atomic
def record(
    fields: dict[str, Any], before: list[str], after: list[str]
) -> tuple[Notification, list[PushSubscription], dict[str, int]]:
    from notifications_app.models import Delivery, Notification, PushSubscription

    subscriptions = list(PushSubscription.objects.all())
    keys = [*before, *(f"webpush:{s.pk}" for s in subscriptions), *after]
    notification = Notification.objects.create(**fields)
    Delivery.objects.bulk_create(Delivery(notification=notification, target=k) for k in keys)
    rows = dict(notification.deliveries.values_list("target", "pk"))
    return notification, subscriptions, rows


def attempted(delivery_id: int, attempts: int, error: str) -> None:
    from notifications_app.models import Delivery

    Delivery.objects.filter(pk=delivery_id, status="pending").update(
        attempts=attempts, error=error, updated_at=timezone.now()
    )


def ended(delivery_id: int, status: str, attempts: int, error: str) -> None:
    from notifications_app.models import Delivery

    Delivery.objects.filter(pk=delivery_id, status="pending").update(
        status=status, attempts=attempts, error=error, next_at=None, updated_at=timezone.now()
    )


def postponed(delivery_id: int, attempts: int, error: str, next_at: datetime) -> None:
    from notifications_app.models import Delivery

    Delivery.objects.filter(pk=delivery_id, status="pending").update(
        attempts=attempts, error=error, next_at=next_at, updated_at=timezone.now()
    )


def still_pending(delivery_id: int) -> int | None:
    """The attempts made so far, or None when it went through or failed meanwhile."""
    from notifications_app.models import Delivery

    row = Delivery.objects.filter(pk=delivery_id, status="pending").values("attempts").first()
    return None if row is None else int(row["attempts"])


def waiting(now: datetime, first: bool) -> tuple[list[dict[str, Any]], datetime | None]:
    """The pending deliveries whose time has come, each with its notification, and the soonest
    time of the others. The first pass after start takes every pending delivery: those a
    stopped run cut off mid-attempt (no `next_at`), and those that waited — svc starting again
    is as good a moment as any to find a target back."""
    from notifications_app.models import Delivery

    pending = Delivery.objects.filter(status="pending")
    due_now = Q() if first else Q(next_at__lte=now)
    rows = pending.filter(due_now).select_related("notification").order_by("id")[:200]
    due = [
        {
            "id": row.pk,
            "target": row.target,
            "made": row.created_at,
            "message": {
                "id": str(row.notification.id),
                "event": row.notification.event,
                "session_id": row.notification.session_id,
                "agent": row.notification.agent,
                "title": row.notification.title,
                "body": row.notification.body,
                "url": row.notification.url,
            },
        }
        for row in rows
    ]
    later = pending.filter(next_at__gt=now).order_by("next_at").values_list("next_at", flat=True)
    return due, later.first()


def subscriptions() -> dict[int, Any]:
    from notifications_app.models import PushSubscription

    return {row.pk: row for row in PushSubscription.objects.all()}


@transaction.atomic
def sweep() -> None:
    """The oldest notifications beyond KEEP go, with their deliveries."""
    from notifications_app.models import Notification

    old = Notification.objects.order_by("-created_at").values_list("pk", flat=True)[KEEP:]
    if old_ids := list(old[:10_000]):
        Notification.objects.filter(pk__in=old_ids).delete()
