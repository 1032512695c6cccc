"""Each running chat channel with a `notify_chat` (contract §14) as a target: the runtime lists
them (`runtime.channel_notifiers()`), each with a `name` and `send_notification(title, body,
url)`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from notifications_app.targets import Message, Target

if TYPE_CHECKING:
    from svcproject.runtime import Runtime

logger = logging.getLogger(__name__)


def targets(runtime: Runtime) -> list[Target]:
    try:
        notifiers = list(runtime.channel_notifiers())
    except Exception:
        logger.exception("could not list the channels to notify")
        return []
    return [Target(f"channel:{n.name}", _sender(n)) for n in notifiers]


def _sender(notifier: Any):  # type: ignore[no-untyped-def]
    async def send(message: Message) -> None:
        await notifier.send_notification(message.title, message.body, message.url)

    return send
