"""The Telegram channel's tests' shared parts: the chat's people, svc's settings for the fake Bot
API, what the bot said, and what the database holds (the fixtures `tg` and `svc`: conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from channels.db import database_sync_to_async

from harness.fakes.telegram_api import FakeTelegram

FAKE_ACP = str(Path(__file__).resolve().parents[2] / "harness" / "fakes" / "acp_agent.py")
OWNER, STRANGER = 111, 999


def settings(fake: FakeTelegram, workspace: Path, **extra: Any) -> dict[str, Any]:
    return {
        "agents": {"fake": {"acp_command": [sys.executable, FAKE_ACP]}},
        "channels": {
            "telegram": {
                "bot_token": fake.token,
                "api_base": fake.api_base,
                "allowed_users": [OWNER],
                "agent": "fake",
                "workspace": str(workspace),
                **extra,
            }
        },
    }


def texts(fake: FakeTelegram, chat: int = OWNER) -> list[str]:
    return [m.get("text", "") for m in fake.sent(chat)]


async def until_sent(fake: FakeTelegram, needle: str, chat: int = OWNER, timeout: float = 30):
    try:
        return await fake.async_wait_for(
            lambda: [m for m in fake.sent(chat) if needle in m.get("text", "")], timeout=timeout
        )
    except TimeoutError:
        raise AssertionError(f"{needle!r} never sent; the chat shows {texts(fake, chat)}") from None


async def sessions() -> list[Any]:
    from sessions_app.models import Session

    return await database_sync_to_async(lambda: list(Session.objects.all()))()


async def polled_again(fake: FakeTelegram) -> None:
    """Until svc asks for updates again after the last answer that handed some out: it has
    finished with that batch (it takes one batch in before polling for the next). Its replies
    go through the outbox, so they may be sent after that next poll began."""
    since = max(c["t"] for c in fake.calls("getUpdates") if c.get("update_ids"))
    await fake.async_wait_for(
        lambda: any(c["t"] > since for c in fake.calls("getUpdates")), timeout=30
    )


def prompts_of(text: str) -> int:
    from sessions_app.models import SessionEvent

    events = SessionEvent.objects.filter(kind="user_message_chunk")
    return sum(e.payload.get("text") == text for e in events)


def only_session() -> str:
    from channels_app.models import ChannelChat

    return ChannelChat.objects.get().session_id
