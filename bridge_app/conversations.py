"""Agent-as-API conversations: which hosted agent session answers which client, for how long.

A conversation is named by `X-Svc-Conversation` (per agent and profile), or found through a
Responses `previous_response_id`; a Responses request that may be continued (`store` not false)
starts one under the id of its answer. Anything else is one-shot: its session ends with the
request. Idle agent processes are stopped after `local_agent_api.idle_seconds` (a later turn
resumes the agent's own session when the agent can load sessions, else starts afresh with the
whole conversation), and conversations are forgotten after `conversation_ttl_seconds`. Named
conversations are also stored (bridge_app.models.Conversation), so after a daemon restart the
same key resumes its agent session; response ids live in memory only.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Callable, Hashable
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async

from bridge_app import ir, services
from bridge_app.routes import Route
from core import config
from core.errors import DomainError
from sessions_app import agent_logs, selectors
from sessions_app import services as session_services

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost

Key = tuple[str, str, str]  # (conversation key, agent, profile)
MAX_RESPONSE_IDS = 2000


class Conversation:
    def __init__(self, host: ProcessHost, key: Key | None, session_id: str) -> None:
        self.host, self.key, self.session_id = host, key, session_id
        self.seen = False  # the agent session has the conversation so far
        self.running: asyncio.Task | None = None
        self.last_used = time.monotonic()
        self.stopped = False  # its process was stopped for idleness

    def chat(self) -> Any:
        chat = self.host.chat(self.session_id)
        if chat is None:
            raise ir.BridgeError(502, "the agent's process has ended")
        return chat

    def told_by_client(self) -> None:
        """The client sent the conversation so far itself: an agent session resumed without its
        own history (contract §17) is told that, not also svc's summary of it."""
        continued = getattr(self.chat(), "continued", None)
        if continued is not None:
            continued.primer = ""

    async def cancel_running(self, wait_s: float) -> None:
        """A new request on a busy conversation cancels the turn still running first."""
        running = self.running
        deadline = time.monotonic() + wait_s
        # Again and again: a cancel that reaches the agent before the turn's own prompt does is
        # ignored by it (ACP cancels the prompt in flight, if any).
        while running is not None and not running.done() and time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                await self.chat().cancel()
            await asyncio.wait([running], timeout=0.25)
        if running is not None and not running.done():
            raise ir.BridgeError(503, "the conversation's running turn did not stop; try again")

    async def turn_ended(self, prompt: asyncio.Task | None) -> None:
        self.last_used = time.monotonic()
        if self.running is prompt:
            self.running = None
        if self.key is None:  # one-shot: its agent process ends with the request
            await self.host.stop_soon(self.session_id)

    async def with_agent_log(self, message: str) -> str:
        """The failure, with the end of what the agent itself wrote to stderr."""
        tail = await sync_to_async(agent_logs.tail)(self.session_id)
        return f"{message}; the agent wrote: {tail}" if tail else message


class Conversations:
    """The runtime's conversations: by key, by Responses id, and one lock per key."""

    def __init__(self, host: ProcessHost) -> None:
        self.host = host
        self._conversations: dict[Key, Conversation] = {}
        self._by_response: collections.OrderedDict[str, Key] = collections.OrderedDict()
        self._locks: dict[Key, asyncio.Lock] = {}

    def _key(self, route: Route, body: dict[str, Any], headers: dict[str, str]) -> Key | None:
        named = headers.get("x-svc-conversation", "").strip()
        if named:
            return (named[:200], route.agent, route.profile)
        previous = body.get("previous_response_id") if route.dialect == "openai-responses" else None
        if previous:
            if previous not in self._by_response:
                raise ir.BridgeError(404, f"Previous response with id {previous!r} not found.")
            return self._by_response[previous]
        if route.dialect == "openai-responses" and body.get("store") is not False:
            return (f"response:{uuid.uuid4().hex}", route.agent, route.profile)
        return None

    @contextlib.asynccontextmanager
    async def turn_slot(
        self, route: Route, body: dict[str, Any], headers: dict[str, str], workspace: str
    ) -> AsyncIterator[Conversation]:
        """The conversation a request talks to, held until its turn has begun: two requests on
        one key neither start two agent sessions nor start two turns at once."""
        key = self._key(route, body, headers)
        if key is None:
            yield await self.find_or_start(key, route, workspace)
            return
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            yield await self.find_or_start(key, route, workspace)

    async def find_or_start(self, key: Key | None, route: Route, workspace: str) -> Conversation:
        known = self._conversations.get(key) if key is not None else None
        if known is None and key is not None and not key[0].startswith("response:"):
            known = await self._stored(key)
        if known is not None and await self._alive(known):
            return known
        session_id = await _start(self.host, route, workspace)
        conversation = Conversation(self.host, key, session_id)
        if key is not None:
            self._conversations[key] = conversation
            if not key[0].startswith("response:"):
                await sync_to_async(services.conversation_record)(
                    key=key[0], agent=key[1], profile_id=key[2], session_id=session_id
                )
        return conversation

    async def _stored(self, key: Key) -> Conversation | None:
        """A named conversation from before a restart: its session, to resume."""
        session_id = await sync_to_async(services.conversation_session)(
            key=key[0], agent=key[1], profile_id=key[2]
        )
        if session_id is None:
            return None
        conversation = Conversation(self.host, key, session_id)
        conversation.seen = True  # kept only if the agent loads its own session back
        self._conversations[key] = conversation
        return conversation

    async def _alive(self, conversation: Conversation) -> bool:
        """Its agent still runs — or was stopped for idleness and resumes."""
        if self.host.chat(conversation.session_id) is not None:
            return True
        before = await sync_to_async(_agent_session_id)(conversation.session_id)
        try:
            await session_services.asession_resume(
                host=self.host, session_id=conversation.session_id
            )
        except DomainError:
            return False
        after = await sync_to_async(_agent_session_id)(conversation.session_id)
        conversation.seen = conversation.seen and bool(before) and after == before
        conversation.stopped = False
        return self.host.chat(conversation.session_id) is not None

    def remember_response(
        self, response_id: str, conversation: Conversation, body: dict[str, Any]
    ) -> None:
        """A Responses answer's id continues its conversation (`previous_response_id`)."""
        if conversation.key is None:
            return
        self._by_response[response_id] = conversation.key
        while len(self._by_response) > MAX_RESPONSE_IDS:
            self._by_response.popitem(last=False)

    # --- idle processes and old conversations --------------------------------------------------

    async def sweep(self, idle_s: float, ttl_s: float, now: float) -> None:
        for key, conversation in list(self._conversations.items()):
            if conversation.running is not None and not conversation.running.done():
                continue
            quiet = now - conversation.last_used
            if quiet >= ttl_s:
                del self._conversations[key]
                self._locks.pop(key, None)
                await self.host.stop_soon(conversation.session_id)
                await sync_to_async(services.conversation_forget)(
                    key=key[0], agent=key[1], profile_id=key[2]
                )
            elif quiet >= idle_s and not conversation.stopped:
                conversation.stopped = True
                await self.host.stop_soon(conversation.session_id)

    def sweeper(self) -> ConversationSweeper:
        return ConversationSweeper(self)

    async def stop(self) -> None:
        """At shutdown the host stops the processes; what is left here is forgotten."""
        self._conversations.clear()
        self._locks.clear()


class ConversationSweeper:
    """A supervised service: stops idle agent processes, forgets old conversations (§6)."""

    name = "conversation-sweeper"
    list_name = "internal"

    def __init__(self, conversations: Conversations) -> None:
        self.conversations = conversations

    def settings_key(self, settings: config.Settings) -> Hashable:
        return None  # it reads the limits afresh each round

    async def run(self, online: Callable[[str], None]) -> None:
        online("")
        while True:
            settings = config.current_settings()
            idle = settings.local_agent_idle_seconds
            ttl = settings.local_agent_conversation_ttl_seconds
            await asyncio.sleep(max(0.2, min(5.0, idle / 4, ttl / 4)))
            await self.conversations.sweep(idle, ttl, time.monotonic())


def _agent_session_id(session_id: str) -> str:
    session = selectors.session_get(session_id)
    return session.agent_session_id if session is not None else ""


async def _start(host: ProcessHost, route: Route, workspace: str) -> str:
    try:
        session = await session_services.asession_create(
            host=host, agent=route.agent, workspace=workspace, kind="api", profile_id=route.profile
        )
    except DomainError as exc:
        raise ir.BridgeError(exc.status if exc.status >= 500 else 502, exc.message) from exc
    return str(session.id)
