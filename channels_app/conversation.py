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
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from channels.db import database_sync_to_async

from channels_app import commands, store
from channels_app.answer import EditClock, StreamedAnswer, end_line, tool_line
from channels_app.config import ChannelConfig
from channels_app.platform import Incoming, Platform
from svcproject.errors import DomainError

logger = logging.getLogger(__name__)

INBOX = ".svc-inbox"


# Commands about what is running now: answered at once, not queued behind the running turn.
def _runtime() -> Any:
    from svcproject.runtime import current

    return current()


class Room:
    """One chat: its session, its queue of prompts, and what it shows of the session's turns."""

    def __init__(self, channel: Channel, chat: str) -> None:
        self.channel, self.chat = channel, chat
        self.session_id = ""
        # What this chat sent, in order: ("prompt" | "command", text). Commands wait their turn
        # too, so `/new` then a message prompts the new session.
        self.prompts: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self.answer: StreamedAnswer | None = None
        self.requests: dict[str, dict[str, Any]] = {}  # short id → the request and its message
        self._subscription: Any = None
        self._worker = asyncio.ensure_future(self._work())

    @property
    def platform(self) -> Platform:
        return self.channel.platform

    async def say(self, text: str) -> None:
        await self.platform.send(self.chat, text[: self.platform.max_len])

    # --- the session ---------------------------------------------------------------------

    async def attach(self, session_id: str) -> bool:
        """Follow `session_id` (its live events from now on); False when its agent is gone."""
        self.detach()
        self.session_id = session_id
        await database_sync_to_async(store.chat_session_set)(
            self.channel.config.name, self.chat, session_id
        )
        chat = _runtime().host.chat(session_id)
        if chat is None:
            return False
        # A channel's room is not a dashboard: it never counts as showing the chat, so a turn
        # that ends with no dashboard tab on it is still notified (contract §15).
        self._subscription = await chat.subscribe(self._on_event, showing=False)
        self._subscription.start()
        return True

    def detach(self) -> None:
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None
        self.answer = None

    def live(self) -> Any:
        return _runtime().host.chat(self.session_id) if self.session_id else None

    async def new_session(self, agent: str = "", workspace: str = "") -> Any:
        from sessions_app import services

        config = self.channel.config
        session = await services.asession_create(
            agent=agent or config.agent, workspace=workspace or config.workspace, kind="chat",
            profile_id=config.profile_id, title=f"{config.name} chat",
        )  # fmt: skip
        await self.attach(str(session.id))
        return session

    # --- prompts, in order -----------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            kind, text = await self.prompts.get()
            try:
                if kind == "command":
                    await self.channel.command(self, text)
                else:
                    await self._prompt(text)
            except DomainError as exc:
                await self.say(f"Could not start the agent: {exc.message}")
            except Exception:
                logger.exception("a prompt from %s failed", self.channel.config.name)
                await self.say("That message could not reach the agent (see svc's log).")

    async def _prompt(self, text: str) -> None:
        chat = self.live()
        if chat is None and self.session_id:
            await self.say(
                f"The agent of session {self.session_id[:8]} is no longer running. "
                "Send /new to start another (or /switch to an earlier one)."
            )
            return
        if chat is None:
            await self.new_session()
            chat = self.live()
        while chat.busy:  # a turn started elsewhere (the dashboard): this one waits for it
            await chat.idle.wait()
        await chat.prompt(text)

    def stop(self) -> None:
        self._worker.cancel()
        self.detach()

    # --- what the session does ---------------------------------------------------------

    def _on_event(self, event: dict[str, Any]) -> None:
        """Called by the session for each event (synchronously, in order)."""
        self.channel.spawn(self._show(event))

    async def _show(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        if kind == "agent_message_chunk" and event.get("text"):
            self._answer().add(str(event["text"]))
        elif kind == "tool_call":
            self._answer().add(tool_line(event))
        elif kind == "turn_end":
            answer, self.answer = self.answer, None
            if answer is not None:
                await answer.finish(end_line(event))
        elif kind == "permission_request":
            await self._ask(event)
        elif kind == "permission_resolved" and event.get("request_id"):
            await self._resolved(event)

    def _answer(self) -> StreamedAnswer:
        if self.answer is None:
            self.answer = StreamedAnswer(self.platform, self.chat, self.channel.clock)
        return self.answer

    async def _ask(self, event: dict[str, Any]) -> None:
        options = list(event.get("options") or [])
        short = str(event["request_id"])[:12]
        title = str((event.get("tool_call") or {}).get("title") or "an action")
        text = f"🔐 The agent asks to: {title[:300]}"
        buttons = [(str(o.get("name") or o["option_id"]), f"p:{short}:{i}")
                   for i, o in enumerate(options)]  # fmt: skip
        message_id = await self.platform.send(self.chat, text, buttons)
        self.requests[short] = {"request_id": str(event["request_id"]), "options": options,
                                "message_id": message_id, "who": ""}  # fmt: skip

    async def choose(self, short: str, index: int, who: str) -> None:
        found = self.requests.get(short)
        chat = self.live()
        if found is None or chat is None or not 0 <= index < len(found["options"]):
            return
        found["who"] = who  # before answering: the resolved event comes back at once
        option = str(found["options"][index]["option_id"])
        if chat.answer_permission(found["request_id"], option) is not None:
            found["who"] = ""

    async def _resolved(self, event: dict[str, Any]) -> None:
        """Answered here, on the dashboard or in another chat: the buttons go, the choice shows."""
        short = str(event["request_id"])[:12]
        found = self.requests.pop(short, None)
        if found is None:
            return
        names = {str(o["option_id"]): str(o.get("name") or o["option_id"])
                 for o in found["options"]}  # fmt: skip
        choice = names.get(str(event.get("option_id")), "no answer (refused)")
        by = f" by {found['who']}" if found["who"] else " elsewhere"
        with contextlib.suppress(Exception):
            await self.platform.edit(
                self.chat, found["message_id"], f"🔐 Answered{by}: {choice}", []
            )


class Channel:
    """A chat channel's conversations: one Room per chat, and the commands."""

    def __init__(self, config: ChannelConfig, platform: Platform) -> None:
        self.config, self.platform = config, platform
        self.clock = EditClock(platform.edit_every_s)
        self.rooms: dict[str, Room] = {}
        self.tasks: set[asyncio.Task] = set()
        self.last_event_at: float | None = None

    def spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

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
        first = await database_sync_to_async(store.event_take)(self.config.name, message.event_id)
        if not first:
            return  # redelivered: it was handled before
        self.last_event_at = time.time()
        if message.user not in self.config.allowed_users:
            await self.platform.send(message.chat, self._stranger(message.user))
            return
        room = await self.room(message.chat)
        text = message.text.strip()
        if text.startswith("/"):
            if (
                commands.command_name(text) in commands.AT_ONCE
            ):  # about the running turn: never behind it
                self.spawn(self.command(room, text))
            else:
                room.prompts.put_nowait(("command", text))
            return
        if message.files or message.too_large:
            text = await self._with_files(room, message, text)
            if text is None:
                return
        if text:
            room.prompts.put_nowait(("prompt", text))

    async def on_button(self, chat: str, user: str, data: str, event_id: str) -> None:
        first = await database_sync_to_async(store.event_take)(self.config.name, event_id)
        if not first or user not in self.config.allowed_users:
            return
        match = re.fullmatch(r"p:([0-9a-f]+):(\d+)", data)
        if match:
            room = await self.room(chat)
            await room.choose(match[1], int(match[2]), user)

    def _stranger(self, user: str) -> str:
        return (
            f"You are not allowed to use this bot. Your user id is {user}: the owner can add it "
            f"to channels.{self.config.name}.allowed_users in svc's settings.json."
        )

    async def _with_files(self, room: Room, message: Incoming, text: str) -> str | None:
        """Files go into the session's workspace under .svc-inbox/ and are named in the prompt."""
        for name in message.too_large:
            await room.say(f"{name} is larger than {self.config.kind} lets a bot download; "
                           "it was not received.")  # fmt: skip
        if not message.files:
            return text or None
        if room.live() is None and not room.session_id:
            await room.new_session()
        session = await database_sync_to_async(commands.session_row)(room.session_id)
        if session is None:
            await room.say("No session to receive files: send /new first.")
            return None
        saved = await asyncio.to_thread(_save_files, Path(session.workspace), message.files)
        listed = "\n".join(f"- {path}" for path in saved)
        return f"Files I sent you (in the workspace):\n{listed}" + (f"\n\n{text}" if text else "")

    # --- commands ------------------------------------------------------------------------

    async def command(self, room: Room, text: str) -> None:
        await commands.run(self, room, text)


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
