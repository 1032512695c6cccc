"""Each running chat channel with a `notify_chat` (contract §14) as a target: the notifier is
given a function that lists them, each with a `name` and `send_notification(title, body, url)`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from notifications_app.targets import Message, Target

logger = logging.getLogger(__name__)


def targets(channel_notifiers: Callable[[], Any]) -> list[Target]:
    try:
        notifiers = list(channel_notifiers())
    except Exception:
        logger.exception("could not list the channels to notify")
        return []
    return [Target(f"channel:{n.name}", _sender(n)) for n in notifiers]


def _sender(notifier: Any):  # type: ignore[no-untyped-def]
    async def send(message: Message) -> None:
        await notifier.send_notification(
            message.title,
            message.body,
            message.url,
            event=message.event,
            session_id=message.session_id,
        )

    return send
