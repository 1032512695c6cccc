"""Reads: the recent notifications with their deliveries (the live list and the API)."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch

RECENT = 50


def notification_list_dicts(limit: int = RECENT) -> list[dict[str, Any]]:
    """Newest first, each with every delivery and its outcome."""
    from notifications_app.models import Delivery, Notification

    recent = Notification.objects.order_by("-created_at").prefetch_related(
        Prefetch("deliveries", queryset=Delivery.objects.order_by("id"))
    )[:limit]
    return [
        {**n.to_dict(), "deliveries": [d.to_dict() for d in n.deliveries.all()]} for n in recent
    ]
