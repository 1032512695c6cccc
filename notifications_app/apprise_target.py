"""`notifications.urls` (contract §15): each entry an Apprise URL — ntfy, Pushover, Discord or
Slack webhooks, e-mail, `json://` … — delivered on its own, one delivery row per URL.

Apprise knows ~100 services by URL, so svc need not: one settings line adds a target. The URL
itself often carries a credential (a webhook token, a password), so it is never stored in a
delivery row, logged or returned; rows name it by its index.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from notifications_app.targets import Message, Permanent, Target


def targets(urls: Any, timeout_s: float) -> list[Target]:
    if not isinstance(urls, list):
        return [Target("apprise:urls", problem="notifications.urls must be a list of Apprise URLs")]
    found = []
    for index, url in enumerate(urls):
        key = f"apprise:{index}"
        if not isinstance(url, str) or "://" not in url:
            found.append(
                Target(key, problem=f"notifications.urls[{index}] must be an Apprise URL string")
            )
        else:
            entry = _Url(url, index, timeout_s)
            found.append(Target(key, entry.send, prepare=entry.prepare))
    return found


def _scheme(url: str) -> str:
    scheme = url.split("://", 1)[0]
    return scheme if re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]{0,20}", scheme) else "?"


class _Url:
    """One `notifications.urls` entry: its Apprise object, built off the loop (the first of a
    process loads Apprise's ~100 plugins, 0.2 s), then one send per attempt."""

    def __init__(self, url: str, index: int, timeout_s: float) -> None:
        self.url, self.index, self.timeout_s = url, index, timeout_s
        self.service: Any = None

    async def prepare(self) -> None:
        self.service = await asyncio.to_thread(_service, self.url)

    async def send(self, message: Message) -> None:
        if self.service is None:
            raise Permanent(
                f"notifications.urls[{self.index}] ({_scheme(self.url)}://…) is not a URL "
                "Apprise knows"
            )
        from apprise import NotifyFormat  # not at the top (see _service); prepare() loaded it

        # Plain text, said explicitly: Apprise then escapes it for each service that reads HTML
        # or Markdown (Telegram, Discord, e-mail …), so no text in a notification becomes a link
        # or markup there. Without a format it passes the body through as it is.
        result = await self.service.async_notify(
            body=message.text(),
            title=message.title,
            body_format=NotifyFormat.TEXT,
            timeout=self.timeout_s,
        )
        if not result:
            levels = ("WARNING", "ERROR", "CRITICAL")
            said = [e.message for e in result.logs() if e.level in levels]
            raise RuntimeError(said[-1] if said else f"{_scheme(self.url)}: not delivered")


def _service(url: str) -> Any:
    import apprise  # for Apprise URLs only, off the loop (prepare): svc starts without it

    service = apprise.Apprise()
    return service if service.add(url) else None
