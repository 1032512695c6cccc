"""`/ws/chat`: chat clients with hosted ACP agents (contract §7).

One socket may hold several sessions. A dashboard page says which of them it shows
(`{"type": "visible", "session_id", "visible"}`): a turn that ends while no client shows its
session is notified (contract §15); a socket that never says counts as showing what it opened.
Everything sent goes through one queue and one writer task, so a session's replayed history, its
`session` event and its live events arrive in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from core import server_compat, untrusted_json
from core.errors import DomainError
from core.runtime import START_WAIT_S
from sessions_app import approvals, parts, prompt_queue, selectors, services
from sessions_app.chat_outbox import HARD_BYTES, PAGE, ChatOutbox
from sessions_app.host.subscription import ChatSubscription
from sessions_app.remote_sockets import RemoteChats

if TYPE_CHECKING:
    from sessions_app.host.acp import AcpSession  # loaded when a chat starts (acp_loading.py)

logger = logging.getLogger(__name__)

CHANNEL_SURFACES = ("telegram", "slack")  # what another member's chat may say it passes on
MAX_EVENT = 4 * 1024 * 1024  # characters of one client event (a prompt is most of it)
CLOSE_TOO_FAR_BEHIND = 4008  # a client that sends and never reads (chat_outbox.HARD_BYTES)


def error(message: str, session_id: str | None = None, key: Any = "") -> dict[str, Any]:
    said = {"kind": "error", "session_id": session_id, "message": message}
    # A keyed prompt's refusal names its key: its client waits for one answer or the other.
    return said | {"key": str(key)[: prompt_queue.KEY_MAX]} if key else said


def seen_upto(after: Any) -> int:
    """`open`'s `after`: the seq of the last event the client has (0: none, the whole history)."""
    return after if isinstance(after, int) and not isinstance(after, bool) and after > 0 else 0


class ChatConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.parts = parts.of(self.scope)
        self.subscriptions: dict[str, tuple[AcpSession, ChatSubscription]] = {}
        await self.accept()
        # What waits for this client is bounded, and read back from the database when it
        # falls behind (chat_outbox): a client that stops reading never costs svc more.
        flow = server_compat.socket_flow(self.base_send)
        self.outbox = ChatOutbox(self._send_text, flow, self._history_page)
        fleet = self.parts.fleet_sockets  # another member's chats on this socket (contract §18)
        self.remote = RemoteChats(self.scope, fleet, self.outbox.put) if fleet else None
        self.writer = asyncio.get_running_loop().create_task(self._write())

    async def _send_text(self, text: str) -> None:
        await self.send(text_data=text)

    async def _history_page(self, session_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        history = database_sync_to_async(selectors.session_events)
        return await history(session_id, after=after, limit=limit)

    async def _write(self) -> None:
        await self.outbox.run()
        logger.warning("a /ws/chat client read nothing of %d bytes: closed", HARD_BYTES)
        await self.close(code=CLOSE_TOO_FAR_BEHIND)

    async def disconnect(self, code: int) -> None:
        for _, subscription in self.subscriptions.values():
            subscription.close()
        if (remote := getattr(self, "remote", None)) is not None:
            await remote.close()
        if hasattr(self, "writer"):
            self.writer.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # A client back while svc starts (a page reconnecting after a restart) is answered once
        # the held chats are taken back: before, its chat read "exited" and a prompt "not live".
        await self.parts.runtime.until_started()
        try:
            message = untrusted_json.loads(text_data or "", max_bytes=MAX_EVENT)
        except untrusted_json.UntrustedJSONError as exc:
            self.outbox.put(error(f"{exc}; send a JSON object with a `type`"))
            return
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self.outbox.put(error("send a JSON object with a `type`"))
            return
        if self.remote is not None and await self._sent_elsewhere(message):
            return
        kind = message.get("type")
        handler = {
            "open": self.on_open,
            "prompt": self.on_prompt,
            "cancel": self.on_cancel,
            "permission": self.on_permission,
            "visible": self.on_visible,
            "unqueue": self.on_unqueue,
            "send_now": self.on_send_now,
        }.get(kind if isinstance(kind, str) else "")
        if handler is None:
            known = "open, prompt, cancel, permission, visible, unqueue or send_now"
            self.outbox.put(error(f"type must be {known}"))
            return
        try:
            await handler(message)
        except Exception:
            # A malformed field must cost the client an error event, never the socket (and with
            # it every subscription this consumer holds).
            logger.exception("chat event %r failed", kind)
            problem = f"could not handle this {kind!r} event; check its fields"
            self.outbox.put(error(problem, key=message.get("key")))

    async def _sent_elsewhere(self, message: dict[str, Any]) -> bool:
        """A message for another member's session (or to start one there) goes to it."""
        assert self.remote is not None
        try:
            machine = await self.remote.machine_for(message)
        except LookupError as exc:
            self.outbox.put(error(str(exc)))
            return True
        if machine is None:
            return False
        await self.remote.send(machine, message)
        return True

    def _on_behalf(self, message: dict[str, Any], surface: str) -> tuple[str, str]:
        """(surface, who) for the record. Another fleet member's chat channel (Telegram, Slack)
        says whose message it passes on (`as`); only a member may (contract §18), and the
        record names that member too."""
        who = approvals.caller(self.scope)
        said = message.get("as")
        if not (self.scope.get("svc_fleet") and isinstance(said, dict)):
            return surface, who
        if said.get("surface") in CHANNEL_SURFACES and said.get("who"):
            via = who.partition(" via ")[2]
            return str(said["surface"]), (f"{said['who']} via {via}" if via else said["who"])
        return surface, who

    async def on_open(self, message: dict[str, Any]) -> None:
        session_id = message.get("session_id")
        if not session_id:
            try:
                session = await services.asession_create(
                    host=self.parts.host,
                    agent=str(message.get("agent") or ""),
                    workspace=str(message.get("workspace") or ""),
                    kind="chat",
                    profile_id=str(message.get("profile_id") or ""),
                )
            except DomainError as exc:
                self.outbox.put(error(str(exc)))
                return
            session_id = str(session.id)
        elif message.get("resume"):
            try:
                await services.asession_resume(host=self.parts.host, session_id=str(session_id))
            except DomainError as exc:
                self.outbox.put(error(str(exc), str(session_id)))
                return
        await self._attach(str(session_id), seen_upto(message.get("after")))

    async def _attach(self, session_id: str, after: int = 0) -> None:
        """The session's history after `after` (the last seq the client has: a page reopening
        its chat on a new socket), its `session` event, its queue, then its live events."""
        session = await database_sync_to_async(selectors.session_get)(session_id)
        if session is None:
            self.outbox.put(error(f"no session {session_id}", session_id))
            return
        session_id = str(session.id)
        if session.kind == "terminal":
            self.outbox.put(error("a terminal session: open it on /ws", session_id))
            return
        chat = await self.parts.host.chat_after_resume(session_id, START_WAIT_S)
        self.outbox.opened(session_id, after)
        history = database_sync_to_async(selectors.session_events)

        def page() -> Any:  # the first page; the rest follows as a catch-up (chat_outbox)
            return history(session_id, after=after, limit=PAGE)

        if chat is None or session_id in self.subscriptions:
            replay = [{**event, "replay": True} for event in await page()]
            for event in replay:
                self.outbox.put(event)
            await self._rest_of(session_id, replay, [self._session_event(session, chat)])
            return
        subscription = await chat.subscribe(self.outbox.put, page, after=after)
        self.subscriptions[session_id] = (chat, subscription)
        for event in subscription.replay:
            self.outbox.put(event)
        queued = await database_sync_to_async(prompt_queue.queued_list)(session_id)
        ending = [self._session_event(session, chat), chat.event("queue", {"items": queued})]
        await self._rest_of(session_id, subscription.replay, ending)
        subscription.start()

    async def _rest_of(
        self, session_id: str, replay: list[dict[str, Any]], ending: list[dict[str, Any]]
    ) -> None:
        """The open's end (`session`, `queue`) after its whole history: a history longer than
        one page has the rest read back as the socket drains, and the end follows it."""
        if len(replay) < PAGE:
            for event in ending:
                self.outbox.put(event)
            return
        last = await database_sync_to_async(selectors.session_last_seq)(session_id)
        self.outbox.behind(session_id, last, ending)

    def _session_event(self, session: Any, chat: AcpSession | None) -> dict[str, Any]:
        return {
            "kind": "session",
            "session_id": str(session.id),
            "agent": session.agent,
            "workspace": session.workspace,
            "status": session.status if chat is not None else "exited",
            "agent_session_id": session.agent_session_id,
            "agent_info": chat.agent_info if chat is not None else {},
            "busy": bool(chat and chat.busy),
        }

    async def _chat_for(self, message: dict[str, Any]) -> AcpSession | None:
        session_id = str(message.get("session_id") or "")
        chat = await self.parts.host.chat_after_resume(session_id, START_WAIT_S)
        if chat is None:
            problem = f"no live chat session {session_id!r}"
            self.outbox.put(error(problem, session_id, message.get("key")))
        return chat

    async def on_prompt(self, message: dict[str, Any]) -> None:
        text = message.get("text")
        if isinstance(text, str) and text.strip().lower().startswith("/pickup"):
            await self.on_pickup(text.strip()[len("/pickup") :].strip())
            return
        chat = await self._chat_for(message)
        if chat is None:
            return
        if not isinstance(text, str) or not text.strip():
            problem = "prompt needs a non-empty `text`"
            self.outbox.put(error(problem, chat.session_id, message.get("key")))
            return
        # Sent now when the chat is idle, else queued (contract §17): the turn runs on its own,
        # so this socket can still cancel it, answer permissions or change the queue.
        source, who = self._on_behalf(message, "dashboard")
        if message.get("key") is None:
            await self._queue_call(chat, prompt_queue.submit(chat, text, source=source, who=who))
            return
        await self._keyed_prompt(chat, message.get("key"), text, source, who)

    async def _keyed_prompt(
        self, chat: AcpSession, key: Any, text: str, source: str, who: str
    ) -> None:
        """A prompt with its client's key: recorded once under it, and answered
        `prompt_received` (`again`: it had come before; `waiting`: prompts queued after it)
        once it is in the record — or an error naming the key. Kept under who sent it: a
        fleet member's keys (its chat channels' messages) and a client's own never meet, so no
        browser can claim a key a member will send."""
        again, waiting = False, 0
        fleet = self.scope.get("svc_fleet")
        sender = f"member {fleet['machine']}" if fleet else "client"
        try:
            key = prompt_queue.checked_key(key)
            waiting = await prompt_queue.submit(
                chat, text, source=source, who=who, key=f"{sender}:{key}"
            )
        except services.AlreadyReceived:
            again = True
        except DomainError as exc:
            self.outbox.put(error(exc.message, chat.session_id, key))
            return
        received = {"session_id": chat.session_id, "key": key, "again": again, "waiting": waiting}
        self.outbox.put({"kind": "prompt_received", **received})

    async def on_unqueue(self, message: dict[str, Any]) -> None:
        chat = await self._chat_for(message)
        if chat is not None:
            await self._queue_call(chat, prompt_queue.remove(chat, message.get("id")))

    async def on_send_now(self, message: dict[str, Any]) -> None:
        chat = await self._chat_for(message)
        if chat is not None:
            await self._queue_call(chat, prompt_queue.send_now(chat, message.get("id")))

    async def _queue_call(self, chat: AcpSession, call: Any) -> None:
        try:
            await call
        except DomainError as exc:
            self.outbox.put(error(exc.message, chat.session_id))

    async def on_pickup(self, code: str) -> None:
        """`/pickup CODE` typed as a prompt: the handed-over session, then (a chat) its history
        and live events on this socket, as if it had been opened."""
        try:
            session = await database_sync_to_async(services.handover_redeem)(
                code=code, failures=self.parts.handover_failures
            )
        except DomainError as exc:
            self.outbox.put(error(exc.message))
            return
        self.outbox.put(
            {"kind": "pickup", "session_id": str(session.id), "session": session.to_dict()}
        )
        if session.kind != "terminal":
            await self._attach(str(session.id))

    async def on_cancel(self, message: dict[str, Any]) -> None:
        chat = await self._chat_for(message)
        if chat is not None:
            with contextlib.suppress(Exception):
                await chat.cancel()

    async def on_visible(self, message: dict[str, Any]) -> None:
        """The page shows this session now, or stops showing it. Only a session this socket
        holds: a page reports its tabs of exited chats too, and those need no answer (an error
        event would show in the chat)."""
        session_id, visible = str(message.get("session_id") or ""), message.get("visible")
        if not isinstance(visible, bool):
            self.outbox.put(error("visible must be true or false", session_id or None))
            return
        held = self.subscriptions.get(session_id)
        if held is not None:
            held[1].showing = visible

    async def on_permission(self, message: dict[str, Any]) -> None:
        request_id, option_id = message.get("request_id"), message.get("option_id")
        problem = f"no pending permission request {request_id!r} to answer"
        # A /ws/chat client is the dashboard, on the main port or a paired device (contract §17).
        by = approvals.decided_by(*self._on_behalf(message, "dashboard"))
        for chat, _ in self.subscriptions.values():
            answer = chat.answer_permission(
                str(request_id), str(option_id), {"surface": by["surface"], "who": by["who"]}
            )
            if answer is None:
                return
            if answer.startswith("option_id"):  # the request is this chat's; the option is not
                problem = answer
        if self.remote is not None and self.remote.machines and not message.get("session_id"):
            # A client that does not say whose request it answers: the members whose chats this
            # socket holds are asked too; the one holding the request answers it.
            for machine in self.remote.machines:
                await self.remote.send(machine, message)
            return
        self.outbox.put(error(problem))
