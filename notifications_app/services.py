"""The notifier's writes (notifications_app/hub.py): a notification and its deliveries recorded
in one transaction, each delivery's attempts and end, and the sweep of old notifications. Each
function is one transaction, keyword-only, called through database_sync_to_async; what is due
after a restart is read in notifications_app/selectors.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from notifications_app.models import Delivery, Notification, PushSubscription

KEEP = 1000  # notifications kept; older ones (and their deliveries) are deleted at start


@transaction.atomic
def notification_record(
    *, fields: dict[str, Any], before: list[str], after: list[str]
) -> tuple[Notification, list[PushSubscription], dict[str, int]]:
    subscriptions = list(PushSubscription.objects.all())
    keys = [*before, *(f"webpush:{s.pk}" for s in subscriptions), *after]
    notification = Notification.objects.create(**fields)
    Delivery.objects.bulk_create(Delivery(notification=notification, target=k) for k in keys)
    rows = dict(notification.deliveries.values_list("target", "pk"))
    return notification, subscriptions, rows


@transaction.atomic
def delivery_attempted(*, delivery_id: int, attempts: int, error: str) -> None:
    Delivery.objects.filter(pk=delivery_id, status="pending").update(
        attempts=attempts, error=error, updated_at=timezone.now()
    )


@transaction.atomic
def delivery_end(*, delivery_id: int, status: str, attempts: int, error: str) -> None:
    Delivery.objects.filter(pk=delivery_id, status="pending").update(
        status=status, attempts=attempts, error=error, next_at=None, updated_at=timezone.now()
    )


@transaction.atomic
def delivery_postpone(*, delivery_id: int, attempts: int, error: str, next_at: datetime) -> None:
    Delivery.objects.filter(pk=delivery_id, status="pending").update(
        attempts=attempts, error=error, next_at=next_at, updated_at=timezone.now()
    )


@transaction.atomic
def notifications_sweep() -> None:
    """The oldest notifications beyond KEEP go, with their deliveries."""
    old = Notification.objects.order_by("-created_at").values_list("pk", flat=True)[KEEP:]
    if old_ids := list(old[:10_000]):
        Notification.objects.filter(pk__in=old_ids).delete()
