"""Channels as supervised services (contract §12, §14), kept in step with settings.json, and
the rows `/ws/channels` and `/api/channels` show."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from channels_app.config import ChannelError, parse

if TYPE_CHECKING:
    from svcproject.runtime import Runtime

STATUS_SHOWN = {"starting": "connecting"}  # §14 says what a person sees while it connects


def declared(settings: Any) -> dict[str, dict[str, Any]]:
    section = settings.raw.get("channels") or {}
    return {n: e for n, e in section.items() if isinstance(e, dict) and n != "web"}


def build(name: str, raw: dict[str, Any]) -> Any:
    config = parse(name, raw)
    if config.kind == "telegram":
        from channels_app.telegram import TelegramChannel

        return TelegramChannel(config)
    from channels_app.slack import SlackChannel

    return SlackChannel(config)


class ChannelService:
    list_name = "channels"

    def __init__(self, runtime: Runtime, name: str) -> None:
        self.runtime, self.name = runtime, name

    def settings_key(self, settings: Any) -> Hashable:
        return json.dumps(declared(settings).get(self.name, {}), sort_keys=True)

    async def run(self, online: Callable[[str], None]) -> None:
        from svcproject import config

        raw = declared(config.current_settings()).get(self.name)
        if raw is None:
            raise ChannelError(f"channels.{self.name}: no longer in settings.json")
        channel = build(self.name, raw)
        self.runtime.channels.running[self.name] = channel
        try:
            await channel.run(online)
        finally:
            self.runtime.channels.running.pop(self.name, None)


class Channels:
    """Every declared, enabled channel runs; the running ones are reachable for notifications."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.running: dict[str, Any] = {}

    async def apply(self, settings: Any) -> None:
        supervisor = self.runtime.supervisor
        running = supervisor.names("channels")
        wanted = {n for n, e in declared(settings).items() if e.get("enabled", True) is not False}
        for name in sorted(running - wanted):
            await supervisor.remove(name)
        for name in sorted(wanted - running):
            await supervisor.add(ChannelService(self.runtime, name), settings)

    def notifiers(self) -> list[Any]:
        return [c for c in self.running.values() if c.config.notify_chat]


def channel_rows(runtime: Runtime | None, settings: Any) -> list[dict[str, Any]]:
    """`{name, kind, status, detail, bot, chats, last_event_at}` for `web` and each channel.
    Credentials never appear here."""
    from channels_app.models import ChannelChat

    states = {s["name"]: s for s in runtime.supervisor.statuses("channels")} if runtime else {}
    chats = {}
    for row in ChannelChat.objects.values_list("channel", flat=True):
        chats[row] = chats.get(row, 0) + 1
    rows = [{"name": "web", "kind": "web", "builtin": True, "enabled": True, "status": "online",
             "detail": "the dashboard", "bot": None, "chats": None,
             "last_event_at": None}]  # fmt: skip
    for name, entry in sorted(declared(settings).items()):
        state = states.get(name, {})
        channel = runtime.channels.running.get(name) if runtime else None
        last = getattr(getattr(channel, "channel", None), "last_event_at", None)
        status = state.get("status", "stopped" if entry.get("enabled", True) else "disabled")
        rows.append({
            "name": name, "kind": str(entry.get("kind", name)), "builtin": False,
            "enabled": entry.get("enabled", True) is not False,
            "status": STATUS_SHOWN.get(status, status), "detail": state.get("detail", ""),
            "retry_in_s": state.get("retry_in_s"),
            "bot": getattr(channel, "username", "") or None, "chats": chats.get(name, 0),
            "last_event_at": datetime.fromtimestamp(last, UTC).isoformat() if last else None,
        })  # fmt: skip
    return rows
