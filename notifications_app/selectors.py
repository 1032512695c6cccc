"""Reads: the recent notifications with their deliveries (the live list and the API), and what
the notifier delivers again (notifications_app/hub.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Prefetch, Q

from notifications_app.models import Delivery, Notification, PushSubscription

RECENT = 50


def notification_list_dicts(limit: int = RECENT) -> list[dict[str, Any]]:
    """Newest first, each with every delivery and its outcome."""
    recent = Notification.objects.order_by("-created_at").prefetch_related(
        Prefetch("deliveries", queryset=Delivery.objects.order_by("id"))
    )[:limit]
    return [
        {**n.to_dict(), "deliveries": [d.to_dict() for d in n.deliveries.all()]} for n in recent
    ]


def delivery_attempts_if_pending(delivery_id: int) -> int | None:
    """The attempts made so far, or None when it went through or failed meanwhile."""
    row = Delivery.objects.filter(pk=delivery_id, status="pending").values("attempts").first()
    return None if row is None else int(row["attempts"])


def deliveries_due(now: datetime, first: bool) -> tuple[list[dict[str, Any]], datetime | None]:
    """The pending deliveries whose time has come, each with its notification, and the soonest
    time of the others. The first pass after start takes every pending delivery: those a
    stopped run cut off mid-attempt (no `next_at`), and those that waited — svc starting again
    is as good a moment as any to find a target back."""
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


def push_subscriptions_by_id() -> dict[int, Any]:
    return {row.pk: row for row in PushSubscription.objects.all()}
