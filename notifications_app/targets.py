"""What every notification target shares: the message, the target's shape, and how a failure is
told (contract §15).

A target is a key (the delivery row's `target`) and one coroutine that sends a message there,
raising when it could not. `Permanent` says retrying will not help (a URL Apprise does not know,
a push subscription the browser dropped); anything else is retried a bounded number of times.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

ERROR_MAX = 300


@dataclass(frozen=True)
class Message:
    id: str
    event: str
    session_id: str | None
    agent: str
    title: str
    body: str
    url: str

    def payload(self) -> dict[str, Any]:
        """What a browser's service worker gets (Web Push) — the same fields the list shows."""
        return {
            "id": self.id,
            "event": self.event,
            "session_id": self.session_id,
            "agent": self.agent,
            "title": self.title,
            "body": self.body,
            "url": self.url,
        }

    def text(self) -> str:
        """The body with the link, for targets that show plain text (chat apps, Apprise)."""
        return f"{self.body}\n{self.url}" if self.url else self.body


Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True)
class Target:
    key: str  # "dashboard", "webpush:<subscription id>", "apprise:<index>", "channel:<name>"
    send: Send | None = None
    problem: str = ""  # known before sending (a malformed settings entry): fails at once
    # Loading what sending needs (a library's plugins, off the loop), once and before the
    # attempts: a slow first load must not use up an attempt's time — an attempt that times
    # out may still arrive, so its retry could be a duplicate.
    prepare: Callable[[], Awaitable[None]] | None = None


class Permanent(Exception):
    """A failure that another attempt would only repeat."""


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_BOT_TOKEN = re.compile(r"bot\d+:[A-Za-z0-9_-]{20,}")


def _url_origin(match: re.Match[str]) -> str:
    """A URL cut down to scheme and host: paths, queries and user info often carry secrets
    (a webhook's token, a bot token, a push endpoint's capability)."""
    try:
        parts = urlsplit(match.group(0))
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<url>"
    return f"{parts.scheme}://{host}{port}" if host else f"{parts.scheme}://…"


def one_line(error: BaseException | str) -> str:
    """An error as one line for the delivery row: no URL beyond its host, no bot token."""
    text = str(error) if not isinstance(error, str) else error
    text = text or type(error).__name__
    text = _BOT_TOKEN.sub("bot<token>", _URL.sub(_url_origin, text))
    text = " ".join(text.split())
    return text if len(text) <= ERROR_MAX else text[: ERROR_MAX - 3] + "..."
