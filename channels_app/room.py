"""One chat of a channel (contract §14): its current session, the turns it follows as streamed
answers, the prompts that wait their turn, and permission requests shown as buttons."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Protocol

from channels.db import database_sync_to_async

from channels_app import store
from channels_app.answer import EditClock, StreamedAnswer, end_line, tool_line
from channels_app.config import ChannelConfig
from channels_app.platform import Platform
from channels_app.remote_chat import RemoteChat, RemoteChatUnavailable
from core.errors import DomainError
from fleet_app.outbound import Forwarder
from fleet_app.sockets import FleetSockets
from sessions_app import approvals, prompt_queue
from sessions_app import services as session_services

logger = logging.getLogger("channels_app.conversation")


@dataclass(frozen=True)
class RemoteSession:
    """A session started on another fleet member, as `/new` tells of it."""

    id: str
    agent: str
    workspace: str
    machine: str


def elsewhere(fleet: FleetSockets | None, session_id: str) -> str | None:
    """The other fleet member whose session this is (None: this member's, or not a fleet)."""
    return fleet.session_owner(session_id) if fleet is not None and session_id else None


class ChannelSide(Protocol):
    """What a room uses of its channel (channels_app/conversation.py `Channel`)."""

    config: ChannelConfig
    host: Any
    platform: Platform
    fleet_sockets: FleetSockets | None  # another member's sessions (contract §18)
    fleet_forward: Forwarder | None
    clock: EditClock
    holding: set[str]

    def spawn(self, coroutine: Awaitable[Any]) -> None: ...

    async def command(self, room: Any, text: str) -> None: ...

    async def handed_over(self, event_id: str) -> None: ...


class Room:
    """One chat: its session, its queue of prompts, and what it shows of the session's turns."""

    def __init__(self, channel: ChannelSide, chat: str) -> None:
        self.channel, self.chat = channel, chat
        self.session_id = ""
        # What this chat sent, in order: ("prompt" | "command", text). Commands wait their turn
        # too, so `/new` then a message prompts the new session.
        # (kind, text, inbox event id): marked done in the inbox once handed over.
        self.prompts: asyncio.Queue[tuple[str, str, str]] = asyncio.Queue()
        self.answer: StreamedAnswer | None = None
        self.requests: dict[str, dict[str, Any]] = {}  # short id → the request and its message
        self._subscription: Any = None
        self.remote: RemoteChat | None = None  # the session is another fleet member's
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
        chat = self.channel.host.chat(session_id)
        if chat is None:
            owner = elsewhere(self.channel.fleet_sockets, session_id)
            return owner is not None and bool(await self.follow(owner, session_id=session_id))
        # A channel's room is not a dashboard: it never counts as showing the chat, so a turn
        # that ends with no dashboard tab on it is still notified (contract §15).
        self._subscription = await chat.subscribe(self._on_event, showing=False)
        self._subscription.start()
        return True

    async def follow(self, machine: str, **fields: Any) -> str:
        """Follow a session of another fleet member (contract §18), or start one there
        (`agent`, `workspace`): its id. RemoteChatUnavailable when that member cannot."""
        self.detach()
        remote = RemoteChat(self.channel.fleet_sockets, machine, self.channel.config.kind)
        self.session_id = await remote.open(self._on_event, **fields)
        self.remote = remote
        await database_sync_to_async(store.chat_session_set)(
            self.channel.config.name, self.chat, self.session_id
        )
        return self.session_id

    def detach(self) -> None:
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None
        if self.remote is not None:
            self.channel.spawn(self.remote.close())
            self.remote = None
        self.answer = None

    def live(self) -> Any:
        if self.remote is not None and self.remote.session_id == self.session_id:
            return self.remote
        return self.channel.host.chat(self.session_id) if self.session_id else None

    async def new_session(self, agent: str = "", workspace: str = "", machine: str = "") -> Any:
        config = self.channel.config
        if machine:  # another fleet member's agent and folder (contract §18)
            agent, workspace = agent or config.agent, workspace or config.workspace
            session_id = await self.follow(machine, agent=agent, workspace=workspace)
            assert self.remote is not None  # follow() set it
            return RemoteSession(session_id, agent, workspace, self.remote.machine_name)
        session = await session_services.asession_create(
            host=self.channel.host,
            agent=agent or config.agent,
            workspace=workspace or config.workspace,
            kind="chat",
            profile_id=config.profile_id,
            title=f"{config.name} chat",
        )
        await self.attach(str(session.id))
        return session

    # --- prompts, in order -----------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            kind, text, event_id = await self.prompts.get()
            try:
                if kind == "command":
                    await self.channel.command(self, text)
                    await self.channel.handed_over(event_id)
                else:
                    await self._prompt(text, event_id)
            except session_services.QueueFull as exc:  # refused for good: not kept to send again
                await self.channel.handed_over(event_id)
                await self.say(f"Not sent: {exc.message}")
            except DomainError as exc:
                await self.say(f"Could not start the agent: {exc.message}")
            except Exception:
                logger.exception("a prompt from %s failed", self.channel.config.name)
                await self.say("That message could not reach the agent (see svc's log).")

    async def _prompt(self, text: str, event_id: str = "") -> None:
        chat = self.live()
        if chat is None and self.session_id:
            await self.say(
                f"The agent of session {self.session_id[:8]} is no longer running. "
                "Send /resume to start it again, /new to start another (or /switch to an "
                "earlier one)."
            )
            return
        if chat is None:
            await self.new_session()
            chat = self.live()
        name = self.channel.config.name
        if isinstance(chat, RemoteChat):
            await self._prompt_elsewhere(chat, text, event_id)
            return
        # Sent at once when the chat is idle, else queued behind the running turn (contract
        # §17); the inbox event is marked handed over in the step that records the prompt.
        waiting = await prompt_queue.submit(
            chat,
            text,
            source=self.channel.config.kind,
            who=f"{self.channel.config.kind} chat {self.chat}",
            recorded=lambda: store.event_done(name, event_id),
        )
        self.channel.holding.discard(event_id)
        if waiting:
            await self.show_queued(chat, waiting)

    async def _prompt_elsewhere(self, chat: RemoteChat, text: str, event_id: str) -> None:
        """To another member's agent. The inbox event is handed over once that member says it
        has the prompt recorded; a restart of this member before then sends it again under the
        same key, and the owner takes it once (sessions_app/prompt_queue.py)."""
        name, kind = self.channel.config.name, self.channel.config.kind
        here = self.channel.fleet_forward.machine_id if self.channel.fleet_forward else ""
        key = f"{here}:{name}:{event_id or secrets.token_hex(8)}"
        try:
            received = await chat.prompt(text, who=f"{kind} chat {self.chat}", key=key)
        except RemoteChatUnavailable as exc:  # not handed over: the next start sends it again
            await self.say(
                f"{exc}: it may still reach the agent there. svc sends it again when it next "
                "starts, and it is taken once."
            )
            return
        except DomainError as exc:  # refused there (its agent exited): a final answer
            await database_sync_to_async(store.event_done)(name, event_id)
            self.channel.holding.discard(event_id)
            await self.say(
                f"Machine {chat.machine_name} did not take the message ({exc.message}). If its "
                "agent has ended, /resume starts it again, /new starts another."
            )
            return
        await database_sync_to_async(store.event_done)(name, event_id)
        self.channel.holding.discard(event_id)
        if received.get("waiting") and not received.get("again"):
            await self.say(
                f"⏳ Queued on {chat.machine_name}: it goes to the agent when the running turn "
                f"ends ({received['waiting']} waiting). /queue lists what waits."
            )

    async def show_queued(self, chat: Any, waiting: int) -> None:
        """Say the message waits, with buttons to send it now or take it back."""
        items = await database_sync_to_async(prompt_queue.queued_list)(chat.session_id)
        if not items:
            return  # sent meanwhile
        last = items[-1]
        text = (
            f"⏳ Queued: it goes to the agent when the running turn ends "
            f"({waiting} waiting). /queue lists them."
        )
        buttons = [("Send now", f"q:{last['id']}:now"), ("Remove", f"q:{last['id']}:rm")]
        await self.platform.send(self.chat, text, buttons)

    async def queue_button(self, queued_id: int, action: str) -> None:
        chat = self.live()
        if chat is None:
            await self.say("The agent of this chat's session is no longer running.")
            return
        if isinstance(chat, RemoteChat):
            await chat.queue_action(queued_id, action)
            await self.say(
                "Sent now: the running turn is cancelled."
                if action == "now"
                else "Removed from the queue."
            )
            return
        try:
            if action == "now":
                await prompt_queue.send_now(chat, queued_id)
                await self.say("Sending it now: the running turn is cancelled.")
            else:
                await prompt_queue.remove(chat, queued_id)
                await self.say("Removed from the queue.")
        except DomainError as exc:
            await self.say(exc.message)

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
        buttons = [
            (str(o.get("name") or o["option_id"]), f"p:{short}:{i}") for i, o in enumerate(options)
        ]
        message_id = await self.platform.send(self.chat, text, buttons)
        self.requests[short] = {
            "request_id": str(event["request_id"]),
            "options": options,
            "message_id": message_id,
            "who": "",
        }

    async def choose(self, short: str, index: int, who: str, name: str = "") -> None:
        """A button tapped by `who` (the platform's user id; `name`, what the platform calls
        them): the answer, recorded as decided on this platform by them (contract §17)."""
        chat = self.live()
        found = self.requests.get(short) or self._still_pending(chat, short)
        if found is None or chat is None or not 0 <= index < len(found["options"]):
            return
        found["who"] = who  # before answering: the resolved event comes back at once
        option = str(found["options"][index]["option_id"])
        by = approvals.decided_by(self.channel.config.kind, f"{name} ({who})" if name else who)
        if chat.answer_permission(found["request_id"], option, dict(by)) is not None:
            found["who"] = ""

    def _still_pending(self, chat: Any, short: str) -> dict[str, Any] | None:
        """A request this room did not ask, still waiting: one asked before svc restarted (its
        buttons were sent by the svc before this one, contract §17). The answer is said anew."""
        waiting = chat.pending_requests() if hasattr(chat, "pending_requests") else []
        for event in waiting:
            if str(event["request_id"])[:12] == short:
                found = {"request_id": str(event["request_id"]), "message_id": None, "who": ""}
                self.requests[short] = {**found, "options": list(event.get("options") or [])}
                return self.requests[short]
        return None

    async def _resolved(self, event: dict[str, Any]) -> None:
        """Answered here, on the dashboard or in another chat: the buttons go, the choice shows."""
        short = str(event["request_id"])[:12]
        found = self.requests.pop(short, None)
        if found is None:
            return
        names = {
            str(o["option_id"]): str(o.get("name") or o["option_id"]) for o in found["options"]
        }
        choice = names.get(str(event.get("option_id")), "no answer (refused)")
        by = f" by {found['who']}" if found["who"] else " elsewhere"
        if found["message_id"] is None:  # its buttons are another run's message
            await self.say(f"🔐 Answered{by}: {choice}")
            return
        with contextlib.suppress(Exception):
            await self.platform.edit(
                self.chat, found["message_id"], f"🔐 Answered{by}: {choice}", []
            )
