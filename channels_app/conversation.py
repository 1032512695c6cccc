"""The conversation model of a chat channel (contract §14), the same for every platform.

Each chat has a current session. A plain message is a prompt to it (a chat session of the
channel's agent starts when there is none); messages sent while the agent is busy wait their
turn, in order. The chat follows every turn of its session — prompted here, from the dashboard
or from another chat — as one streamed message per turn, and shows permission requests as
buttons. Only `allowed_users` act; anyone else is told their id and nothing else happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from channels.db import database_sync_to_async
from django.utils import timezone

from channels_app import commands, inbox, store
from channels_app.answer import EditClock
from channels_app.config import ChannelConfig
from channels_app.outbox import RETRY_FIRST_S, RETRY_MAX_S, Now, Outbox, Retry
from channels_app.platform import FileNotReceived, Incoming, Platform
from channels_app.room import Room
from fleet_app.outbound import Forwarder
from fleet_app.sockets import FleetSockets
from sessions_app.handover import FailureWindow

logger = logging.getLogger(__name__)

INBOX = ".svc-inbox"


class Conversations(Protocol):
    """Where a platform's module (telegram.py, slack.py) gets its channel's conversation, kept
    across the platform's restarts (supervised.py's `Channels`, which starts the platforms)."""

    def conversation(self, config: ChannelConfig, platform: Platform) -> Channel: ...


class Channel:
    """A chat channel's conversations: one Room per chat, and the commands."""

    def __init__(
        self,
        config: ChannelConfig,
        platform: Platform,
        host: Any,
        *,
        failures: FailureWindow,
        fleet_sockets: FleetSockets | None = None,
        fleet_forward: Forwarder | None = None,
        now: Now = timezone.now,
        retry: Retry = lambda: (RETRY_FIRST_S, RETRY_MAX_S),
        changed: Callable[[], Any] | None = None,
        asking: Callable[[Incoming], Any] | None = None,
    ) -> None:
        self.config = config
        self.asking = asking  # a stranger wrote: the dashboard offers to allow them
        self.host = host  # the process host: the chat sessions this channel talks to
        self.failures = failures  # failed /pickup codes (contract §4's limit)
        # Another fleet member's sessions, followed and prompted from here (contract §18).
        self.fleet_sockets, self.fleet_forward = fleet_sockets, fleet_forward
        self.clock = EditClock(platform.edit_every_s)
        # What the conversation sends through: every message and edit is recorded in the
        # outbox and delivered from there while the channel is connected (contract §17).
        self.outbox = Outbox(
            config.name,
            platform,
            self.clock,
            now=now,
            retry=retry,
            changed=changed,
            secrets=(config.token, config.app_token),
        )
        self.platform: Platform = self.outbox
        self.rooms: dict[str, Room] = {}
        self.tasks: set[asyncio.Task] = set()
        self.last_event_at: float | None = None
        self.holding: set[str] = set()  # inbox events this run is handling now

    def spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def answered_here(self, chat: str, event: str, session_id: str | None) -> bool:
        """A turn's end is not news in a chat that follows the session (the answer is already
        there, marked done): that chat — or a thread of it (Slack) — gets no "finished its
        turn" notification on top (issue 33)."""
        if event != "turn_ended" or not session_id or not chat:
            return False
        return any(
            room.session_id == session_id and (key == chat or key.startswith(f"{chat}:"))
            for key, room in self.rooms.items()
        )

    async def room(self, chat: str) -> Room:
        if chat not in self.rooms:
            room = self.rooms[chat] = Room(self, chat)
            known = await database_sync_to_async(store.chat_session_get)(self.config.name, chat)
            if known:
                await room.attach(known)
        return self.rooms[chat]

    def stop(self) -> None:
        for room in self.rooms.values():
            room.stop()
        for task in list(self.tasks):
            task.cancel()

    # --- what arrives --------------------------------------------------------------------

    async def on_message(self, message: Incoming) -> None:
        if message.event_id in self.holding:
            return  # delivered again while this run still handles it
        payload = inbox.payload_of(message)
        state = await database_sync_to_async(store.event_take)(
            self.config.name, message.event_id, payload
        )
        if state == "handled":
            return  # redelivered: handed over before, or failed and recorded so
        await self.take_in(message)

    async def take_in(self, message: Incoming) -> None:
        """Handle one message the inbox holds (new, or left unfinished by a run that stopped)."""
        if message.event_id:
            self.holding.add(message.event_id)
        self.last_event_at = time.time()
        try:
            await self._take_in(message)
        except Exception as exc:
            allowed = message.user in self.config.allowed_users
            await self.failed(message.event_id, exc, tell=message.chat if allowed else "")

    async def _take_in(self, message: Incoming) -> None:
        # Who is asking comes first: nothing of a stranger's (their files) is fetched.
        if message.user not in self.config.allowed_users:
            if self.asking is not None:
                self.asking(message)
            await self.platform.send(message.chat, self._stranger(message.user))
            await self.handed_over(message.event_id)
            return
        room = await self.room(message.chat)
        text = message.text.strip()
        if text.startswith("/"):
            if commands.command_name(text) in commands.AT_ONCE:  # never behind the running turn
                self.spawn(self.command_then_done(room, text, message.event_id))
            else:
                room.prompts.put_nowait(("command", text, message.event_id))
            return
        if message.files or message.skipped:
            text = await self._with_files(room, message, text)
            if text is None:
                await self.handed_over(message.event_id)
                return
        if text:
            room.prompts.put_nowait(("prompt", text, message.event_id))
        else:
            await self.handed_over(message.event_id)

    async def on_button(
        self, chat: str, user: str, data: str, event_id: str, name: str = ""
    ) -> None:
        first = await database_sync_to_async(store.event_take)(self.config.name, event_id)
        if not first or user not in self.config.allowed_users:
            return
        # Request ids are a uuid's hex, or `r<offset>` for an agent's held by the holder.
        queued = re.fullmatch(r"q:(\d+):(now|rm)", data)
        if queued:
            room = await self.room(chat)
            await room.queue_button(int(queued[1]), queued[2])
            return
        match = re.fullmatch(r"p:([0-9a-z]+):(\d+)", data)
        if match:
            try:
                room = await self.room(chat)
                await room.choose(match[1], int(match[2]), user, name)
            except Exception as exc:
                await self.failed(event_id, exc, tell=chat)

    async def failed(self, event_id: str, exc: Exception, tell: str = "") -> None:
        """Handling one event failed: it is recorded `failed` with the reason (so a copy sent
        again is not handled again) and, when `tell` names the allowed sender's chat, they read
        the reason in one line. Never raises: the events after this one must still be handled."""
        reason = self._reason(exc)
        unexpected = not isinstance(exc, FileNotReceived)
        logger.warning(
            "%s: event %s failed: %s", self.config.name, event_id, reason, exc_info=unexpected
        )
        try:
            await database_sync_to_async(store.event_failed)(self.config.name, event_id, reason)
            self.holding.discard(event_id)
        except Exception:
            logger.exception("%s: could not record event %s as failed", self.config.name, event_id)
        if tell:
            with contextlib.suppress(Exception):
                line = f"That message did not reach the agent: {reason}"
                await self.platform.send(tell, line[: self.platform.max_len])

    def _reason(self, exc: Exception) -> str:
        """The error in one line, without the channel's credentials (a Telegram file URL carries
        the bot token; an error that quotes one must not put it in a chat or the database)."""
        text = " ".join(str(exc).split()) or type(exc).__name__
        for secret in (self.config.token, self.config.app_token):
            if secret:
                text = text.replace(secret, "<token>")
        return text[:300]

    def _stranger(self, user: str) -> str:
        return (
            f"You are not allowed to use this bot. Your user id is {user}: the owner can allow "
            f"you in svc's dashboard (Channels, under {self.config.name}), or add it to "
            f"channels.{self.config.name}.allowed_users in svc's settings.json."
        )

    async def _with_files(self, room: Room, message: Incoming, text: str) -> str | None:
        """Files go into the session's workspace under .svc-inbox/ and are named in the prompt.
        A download that fails raises FileNotReceived: the message then does not reach the
        agent at all (a prompt about a file it never got would mislead it)."""
        for name, why in message.skipped:
            await room.say(f"{name} was not received: {why}.")
        if not message.files:
            return text or None
        fetched = [(item.name, await item.fetch()) for item in message.files]
        if room.live() is None and not room.session_id:
            await room.new_session()
        session = await database_sync_to_async(commands.session_row)(room.session_id)
        if session is None:
            await room.say("No session to receive files: send /new first.")
            return None
        saved = await asyncio.to_thread(_save_files, Path(session.workspace), tuple(fetched))
        listed = "\n".join(f"- {path}" for path in saved)
        return f"Files I sent you (in the workspace):\n{listed}" + (f"\n\n{text}" if text else "")

    # --- commands ------------------------------------------------------------------------

    async def command(self, room: Room, text: str) -> None:
        await commands.run(self, room, text)

    async def command_then_done(self, room: Room, text: str, event_id: str) -> None:
        await self.command(room, text)
        await self.handed_over(event_id)

    async def handed_over(self, event_id: str) -> None:
        """The inbox event is handed over: marked done, and no longer held by this run."""
        if not event_id:
            return
        await database_sync_to_async(store.event_done)(self.config.name, event_id)
        self.holding.discard(event_id)

    async def replay_unfinished(self, started: Any) -> int:
        """What a run before `started` took in and never handed over, in order (contract §17)."""
        left = await database_sync_to_async(store.events_unfinished)(self.config.name, started)
        for entry in left:
            if entry["event_id"] not in self.holding:
                await self.take_in(inbox.incoming_of(entry))
        return len(left)


def _save_files(workspace: Path, files: tuple[tuple[str, bytes], ...]) -> list[str]:
    inbox = workspace / INBOX
    inbox.mkdir(parents=True, exist_ok=True)
    saved = []
    for name, data in files:
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name).name).lstrip(".") or "file"
        path = inbox / f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}"
        path.write_bytes(data)
        saved.append(str(path.relative_to(workspace)))
    return saved
