"""Reads for chat channels: the `/ws/channels` list and `GET /api/channels` (contract §14)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from channels_app import outbox_rows
from channels_app.config import declared
from channels_app.models import ChannelChat
from core import config

if TYPE_CHECKING:
    from channels_app.supervised import Channels

STATUS_SHOWN = {"starting": "connecting"}  # §14 says what a person sees while it connects


def channel_list_dicts(parts: Any) -> list[dict[str, Any]]:
    """`web` and each declared channel, with its service's status when one runs (given the
    daemon's parts; None: none runs)."""
    return channel_rows(parts.channels if parts is not None else None, config.current_settings())


def channel_rows(channels: Channels | None, settings: Any) -> list[dict[str, Any]]:
    """`{name, kind, status, detail, bot, chats, last_event_at}` for `web` and each channel
    (`channels` None: none runs). Credentials never appear here."""
    states = {s["name"]: s for s in channels.supervisor.statuses("channels")} if channels else {}
    chats: dict[str, int] = {}
    for row in ChannelChat.objects.values_list("channel", flat=True):
        chats[row] = chats.get(row, 0) + 1
    rows = [
        {
            "name": "web",
            "kind": "web",
            "builtin": True,
            "enabled": True,
            "status": "online",
            "detail": "the dashboard",
            "bot": None,
            "chats": None,
            "last_event_at": None,
        }
    ]
    for name, entry in sorted(declared(settings).items()):
        state = states.get(name, {})
        channel = channels.running.get(name) if channels else None
        last = getattr(getattr(channel, "channel", None), "last_event_at", None)
        status = state.get("status", "stopped" if entry.get("enabled", True) else "disabled")
        rows.append(
            {
                "name": name,
                "kind": str(entry.get("kind", name)),
                "builtin": False,
                "enabled": entry.get("enabled", True) is not False,
                "status": STATUS_SHOWN.get(status, status),
                "detail": state.get("detail", ""),
                "retry_in_s": state.get("retry_in_s"),
                "bot": getattr(channel, "username", "") or None,
                "chats": chats.get(name, 0),
                "last_event_at": datetime.fromtimestamp(last, UTC).isoformat() if last else None,
                "outbox": outbox_rows.summary(name),  # what waits, what never arrived (§17)
                # How many strangers wait to be allowed; who they are is the main port's
                # (GET /api/channels/<name>/asking): a paired device reads this list too.
                "asking": len(channels.asking_list(name)) if channels else 0,
                "secret_stored": any(k in entry for k in ("bot_token_secret", "app_token_secret")),
            }
        )
    return rows
