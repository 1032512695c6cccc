"""What the conversation needs of a chat platform: send, edit, and its limits. Telegram and
Slack each implement it over their own library (channels_app/telegram.py, slack.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

Buttons = list[tuple[str, str]]  # (label, data the tap sends back)


@dataclass(frozen=True)
class Incoming:
    """One message from a person: who, where, what (text, and files already downloaded)."""

    chat: str  # the platform's chat key (Telegram chat id; Slack channel[:thread ts])
    user: str
    text: str
    event_id: str  # for "never answered twice"
    files: tuple[tuple[str, bytes], ...] = ()  # (file name, content)
    too_large: tuple[str, ...] = ()  # files the platform would not hand over, by name


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
