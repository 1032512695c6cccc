"""What the conversation needs of a chat platform: send, edit, and its limits. Telegram and
Slack each implement it over their own library (channels_app/telegram.py, slack.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

Buttons = list[tuple[str, str]]  # (label, data the tap sends back)


class FileNotReceived(Exception):
    """A file of the message could not be downloaded; the message says which and why, in words
    a person reads (never a URL: a Telegram file URL carries the bot token)."""


@dataclass(frozen=True)
class InboxFile:
    """A file sent with a message, not yet downloaded: `fetch` is called only once the sender is
    known to be allowed, so nothing of a stranger's is ever fetched."""

    name: str
    fetch: Callable[[], Awaitable[bytes]]  # raises FileNotReceived


@dataclass(frozen=True)
class Incoming:
    """One message from a person: who, where, what (text, and the files it carries)."""

    chat: str  # the platform's chat key (Telegram chat id; Slack channel[:thread ts])
    user: str
    text: str
    event_id: str  # for "never answered twice"
    files: tuple[InboxFile, ...] = ()
    # Files that will not be fetched, as (file name, why): too large for a bot, or on a host
    # the bot token must not go to. Named in a reply, never dropped silently.
    skipped: tuple[tuple[str, str], ...] = ()
    name: str = ""  # how the platform names the sender (@username, or their name), if it says


class Platform(Protocol):
    name: str
    max_len: int  # characters per message
    edit_every_s: float  # at most one edit of a streaming answer this often per chat

    async def send(self, chat: str, text: str, buttons: Buttons | None = None) -> str:
        """Post a message; returns its id."""
        ...

    async def edit(
        self, chat: str, message_id: str, text: str, buttons: Buttons | None = None
    ) -> None: ...

    def retry_in(self, exc: Exception) -> float | None:
        """A send or edit failed with `exc`: None when the platform refused it for good (another
        attempt would be refused too), else the seconds it asked svc to wait (0: no say) —
        it could not be reached, or was busy (channels_app/outbox.py)."""
        ...
