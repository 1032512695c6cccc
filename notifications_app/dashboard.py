"""The dashboard target: the live list `notifications` (/ws/notifications) re-sends, and every
open dashboard shows the new entry (a browser notification when its tab is hidden). The list
carries the stored rows, so a dashboard that reconnects sees the same entries again — as the
list, never as new notifications."""

from __future__ import annotations

from core import live as lists
from notifications_app.targets import Message, Target

LIST_NAME = "notifications"


async def publish(message: Message | None = None) -> None:
    await lists.abroadcast(LIST_NAME)


def targets() -> list[Target]:
    return [Target("dashboard", publish)]
