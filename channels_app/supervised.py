"""Channels as supervised services (contract §12, §14), kept in step with settings.json (the
rows `/ws/channels` and `/api/channels` show are selectors.py's)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Hashable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from channels_app import outbox, secret_store
from channels_app.config import ChannelConfig, ChannelError, declared, parse
from channels_app.conversation import Channel
from channels_app.platform import Incoming, Platform
from core import config
from fleet_app.outbound import Forwarder
from fleet_app.sockets import FleetSockets
from sessions_app.handover import FailureWindow

if TYPE_CHECKING:
    from core.supervisor import Supervisor


def build(name: str, raw: dict[str, Any], conversations: Channels) -> Any:
    config = parse(name, raw)
    if config.kind == "telegram":
        from channels_app.telegram import TelegramChannel  # its library loads for Telegram only

        return TelegramChannel(config, conversations)
    from channels_app.slack import SlackChannel  # slack_bolt (~0.5 s to import): for Slack only

    return SlackChannel(config, conversations)


class ChannelService:
    list_name = "channels"

    def __init__(self, channels: Channels, name: str) -> None:
        self.channels, self.name = channels, name

    def settings_key(self, settings: Any) -> Hashable:
        entry = declared(settings).get(self.name, {})
        # A token replaced in secrets.json under the same key restarts the channel too.
        stored = sorted(
            str(entry[k]) for k in ("bot_token_secret", "app_token_secret") if k in entry
        )
        return json.dumps(entry, sort_keys=True) + secret_store.digest(stored)

    async def run(self, online: Callable[[str], None]) -> None:
        raw = declared(config.current_settings()).get(self.name)
        if raw is None:
            raise ChannelError(f"channels.{self.name}: no longer in settings.json")
        channel = build(self.name, raw, self.channels)
        self.channels.running[self.name] = channel
        try:
            await channel.run(online)
        finally:
            self.channels.running.pop(self.name, None)


class Channels:
    """Every declared, enabled channel runs; the running ones are reachable for notifications.

    A channel's conversation (its chats, the turns they follow, its outbox) lives here, not in
    one run of its service: when the platform goes away and the service restarts, the chats
    keep following their sessions and what they would have shown waits in the outbox, which
    the next run delivers (contract §17). A changed configuration starts a new conversation."""

    def __init__(
        self,
        supervisor: Supervisor,
        host: Any,
        *,
        failures: FailureWindow,
        fleet_sockets: FleetSockets | None = None,
        fleet_forward: Forwarder | None = None,
    ) -> None:
        self.supervisor, self.host, self.failures = supervisor, host, failures
        self.fleet_sockets, self.fleet_forward = fleet_sockets, fleet_forward
        self.running: dict[str, Any] = {}
        self.conversations: dict[str, Channel] = {}
        # Senders not on a channel's allow-list who wrote to it, newest last: channel → user id
        # → {user, name, chat, text, at}. Kept in memory (a stranger who writes again after a
        # restart is asked about again); the dashboard offers to allow them.
        self.asking: dict[str, dict[str, dict[str, Any]]] = {}
        # The outbox's clock and its retry pace (channels_app/outbox.py); tests move them.
        self.clock: Callable[[], datetime] = timezone.now
        self.retry_first_s, self.retry_max_s = outbox.RETRY_FIRST_S, outbox.RETRY_MAX_S

    def conversation(self, config: ChannelConfig, platform: Platform) -> Channel:
        """The channel's conversation: the one it had, unless its settings changed."""
        found = self.conversations.get(config.name)
        if found is not None and found.config == config:
            return found
        if found is not None:
            found.stop()
        made = Channel(
            config,
            platform,
            self.host,
            failures=self.failures,
            fleet_sockets=self.fleet_sockets,
            fleet_forward=self.fleet_forward,
            now=lambda: self.clock(),
            retry=lambda: (self.retry_first_s, self.retry_max_s),
            changed=self._changed,
            asking=lambda message: self._asked(config.name, message),
        )
        self.conversations[config.name] = made
        return made

    def _changed(self) -> None:
        """An outbox row failed, or waits, or went through after waiting: /ws/channels re-sends."""
        with contextlib.suppress(RuntimeError):  # no loop: nobody to tell
            asyncio.get_running_loop().create_task(self.supervisor.publish("channels"))

    def _asked(self, name: str, message: Incoming) -> None:
        senders = self.asking.setdefault(name, {})
        senders.pop(message.user, None)  # the newest last
        senders[message.user] = {
            "user": message.user,
            "name": message.name,
            "chat": message.chat,
            "text": message.text[:200],
            "at": timezone.now().isoformat(),
        }
        while len(senders) > 50:  # a flood of strangers must not grow this without end
            senders.pop(next(iter(senders)))
        self._changed()

    def asking_list(self, name: str) -> list[dict[str, Any]]:
        """Who wrote while not allowed, newest first, leaving out anyone allowed since."""
        entry = declared(config.current_settings()).get(name, {})
        allowed = {str(u) for u in entry.get("allowed_users") or []}
        rows = [r for r in self.asking.get(name, {}).values() if r["user"] not in allowed]
        return rows[::-1]

    def allowed(self, name: str, user: str) -> None:
        """Called from the API's thread: its caller tells /ws/channels."""
        self.asking.get(name, {}).pop(user, None)

    def wake(self) -> None:
        """Every outbox looks at what is due now (the clock was moved)."""
        for conversation in self.conversations.values():
            conversation.outbox.wake()

    async def apply(self, settings: Any) -> None:
        supervisor = self.supervisor
        running = supervisor.names("channels")
        wanted = {n for n, e in declared(settings).items() if e.get("enabled", True) is not False}
        for name in sorted(running - wanted):
            await supervisor.remove(name)
            if (gone := self.conversations.pop(name, None)) is not None:
                gone.stop()
        for name in sorted(wanted - running):
            await supervisor.add(ChannelService(self, name), settings)

    def stop(self) -> None:
        """At svc's stop: every conversation's rooms stop following their sessions."""
        for conversation in self.conversations.values():
            conversation.stop()
        self.conversations.clear()

    def notifiers(self) -> list[Any]:
        """Each declared, enabled channel with a notify_chat, running or not: a notification
        made while its service reconnects waits for it (the notifier tries again)."""
        return [
            ChannelNotifier(self, name)
            for name, entry in sorted(declared(config.current_settings()).items())
            if entry.get("enabled", True) is not False and entry.get("notify_chat")
        ]


class ChannelOffline(Exception):
    """The channel is not connected now: a notification for it is tried again later."""


class ChannelNotifier:
    """A notification target for one channel (notifications_app/channel_target.py): its
    running service's, or a passing failure while it is not running."""

    def __init__(self, channels: Channels, name: str) -> None:
        self.channels, self.name = channels, name

    async def send_notification(
        self, title: str, body: str, url: str, event: str = "", session_id: str | None = None
    ) -> None:
        running = self.channels.running.get(self.name)
        if running is None:
            raise ChannelOffline(f"channel {self.name} is not running")
        await running.send_notification(title, body, url, event=event, session_id=session_id)
