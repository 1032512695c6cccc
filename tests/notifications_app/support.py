"""Helpers for the notification tests: a channel notifier stub and reads of delivery rows."""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async


class StubChannel:
    """What the notifier's `channel_notifiers()` lists: a running channel with a notify_chat."""

    def __init__(self, name: str = "telegram", hang: bool = False) -> None:
        self.name, self.hang = name, hang
        self.sent: list[tuple[str, str, str]] = []

    async def send_notification(self, title: str, body: str, url: str, **_: Any) -> None:
        if self.hang:
            await asyncio.sleep(3600)
        self.sent.append((title, body, url))


def deliveries(notification_id: str | None = None) -> dict[str, dict[str, Any]]:
    """target → its delivery row (of one notification, or of the newest)."""
    from notifications_app.models import Delivery, Notification

    if notification_id is None:
        newest = Notification.objects.order_by("-created_at").first()
        assert newest is not None, "no notification was recorded"
        notification_id = str(newest.id)
    rows = Delivery.objects.filter(notification_id=notification_id)
    return {d.target: d.to_dict() for d in rows}


adeliveries = sync_to_async(deliveries)


async def until(condition: Any, limit: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + limit
    while not await _holds(condition):
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def _holds(condition: Any) -> bool:
    """`condition()`, awaited when it is a coroutine."""
    value = condition()
    return bool(await value) if asyncio.iscoroutine(value) else bool(value)
