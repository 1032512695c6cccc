"""The agent-as-API (contract §6): `/svc/local-agent/{agent}/{profile}/v1/…`. A model request
becomes a prompt to a hosted ACP agent (a `Session` of kind `api`, its model traffic bound to
`{profile}` through the bridge) and the agent's turn comes back as the model's answer, in the
client's dialect, streamed or not.

Conversations (`X-Svc-Conversation`, or a Responses `previous_response_id`) keep one agent
session and send it only the new tail; anything else is one-shot and its process ends with the
request. Sessions are reached only through the host's interface and sessions_app's services.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async

from bridge_app import agent_turn, conversations, dialects, ir, translate
from bridge_app.exchange import Incoming, Reply
from bridge_app.routes import Route
from core import config
from sessions_app import agents, selectors

CANCEL_WAIT_S = 5.0  # how long a new turn waits for the cancelled one to end


def _settings() -> config.Settings:
    return config.current_settings()


def _check_agent(route: Route) -> None:
    """503 when the service is off, 404 for an unknown agent or profile, 403 when the agent is
    not offered as an API."""
    settings = _settings()
    if not settings.local_agent_enabled:
        raise ir.BridgeError(
            503, "the agent-as-API is off: set local_agent_api.enabled in settings.json"
        )
    if agents.get_agent(route.agent) is None:
        raise ir.BridgeError(404, f"no agent {route.agent!r}")
    translate.find_profile(route)
    if route.agent not in settings.local_agent_agents:
        raise ir.BridgeError(
            403, f"agent {route.agent!r} is not listed in local_agent_api.agents in settings.json"
        )


def models(route: Route, anthropic: bool) -> Reply:
    """The agents offered as an API, as models, in the client's list shape."""
    settings = _settings()
    if not settings.local_agent_enabled:
        raise ir.BridgeError(503, "the agent-as-API is off: set local_agent_api.enabled")
    codec = dialects.get("anthropic" if anthropic else route.dialect)
    offered = list(settings.local_agent_agents)
    if route.operation == "model":
        if route.model not in offered:
            raise ir.BridgeError(404, f"agent {route.model!r} is not offered as an API")
        return Reply(body=codec.encode_model(route.model))
    return Reply(body=codec.encode_model_list(offered))


def _workspace(headers: dict[str, str]) -> str:
    """`X-Svc-Cwd` must name a registered workspace; without it, the first registered one."""
    # In the order they were registered: settings.json keeps it, then any only in the database.
    declared = list(_settings().workspaces)
    registered = declared + [w.path for w in selectors.workspace_list() if w.path not in declared]
    wanted = headers.get("x-svc-cwd", "")
    if wanted:
        resolved = str(Path(wanted).resolve())
        if resolved not in registered:
            raise ir.BridgeError(400, f"X-Svc-Cwd {wanted!r} is not a registered workspace")
        return resolved
    if not registered:
        raise ir.BridgeError(400, "no workspace: send X-Svc-Cwd, or register one first")
    return registered[0]


async def generate(
    talks: conversations.Conversations,
    route: Route,
    incoming: Incoming,
    headers: dict[str, str],
    log: dict[str, Any] | None = None,
) -> Reply:
    """The request as a turn of a hosted agent's conversation (contract §6)."""
    _check_agent(route)
    body, _ = incoming.take()
    client = dialects.get(route.dialect)
    req = client.decode_request(body, route.agent)
    stream = bool(body.get("stream"))
    if log is not None:
        log.update(provider="agent", model=route.agent, stream=stream)
    workspace = await sync_to_async(_workspace)(headers)
    allow = headers.get("x-svc-permission-mode") == "allow"
    async with talks.turn_slot(route, body, headers, workspace) as conversation:
        await conversation.cancel_running(CANCEL_WAIT_S)
        turn = Turn(conversation, route, allow)
        if not conversation.seen and agent_turn.carries_history(req):
            conversation.told_by_client()
        await turn.begin(agent_turn.prompt_text(req, new_session=not conversation.seen))
    try:
        if route.dialect == "openai-responses":
            talks.remember_response(turn.response_id, conversation, body)
        return await _answer(turn, stream)
    except BaseException:
        # The client left (run_watched cancels this task) or the agent failed before the answer
        # was handed on: nobody else ends the turn, so the agent would go on with it.
        await turn.end()
        raise


async def _answer(turn: Turn, stream: bool) -> Reply:
    """The turn whole, or as a stream once the agent has said something (an agent that fails
    before saying anything is a 502, not a 200); the stream ends the turn when it closes."""
    if not stream:
        return Reply(body=await turn.whole())
    await turn.wait_first()
    encoder = dialects.stream(turn.route.dialect).StreamEncoder(turn.route.agent, True)
    return Reply(chunks=turn.stream(encoder), content_type="text/event-stream")


class Turn:
    """One prompt to a conversation's agent session, read back as neutral stream events."""

    def __init__(self, conversation: conversations.Conversation, route: Route, allow: bool):
        self.conversation, self.route, self.allow = conversation, route, allow
        self.response_id = _response_id(route.dialect)
        self.events = agent_turn.TurnEvents(self.response_id)
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._subscription: Any = None
        self._prompt: asyncio.Task | None = None
        self._first: dict[str, Any] | None = None
        self.failure = ""
        self._ending: asyncio.Future[None] | None = None

    async def begin(self, text: str) -> None:
        chat = self.conversation.chat()
        chat.permission_mode = "allow" if self.allow else "deny"
        self._subscription = await chat.subscribe(self._queue.put_nowait)
        self._subscription.start()
        self._prompt = asyncio.ensure_future(chat.prompt(text))
        self.conversation.running = self._prompt
        self.conversation.seen = True

    async def _next(self) -> dict[str, Any]:
        if self._first is not None:
            event, self._first = self._first, None
            return event
        return await self._queue.get()

    async def wait_first(self) -> None:
        """Hold the answer until the agent has said something or ended: a failure before any
        word can still be a 502 in the client's dialect."""
        while True:
            event = await self._queue.get()
            if event.get("kind") in ("error", "session"):
                raise ir.BridgeError(502, await self._failure(event))
            if agent_turn.speaks(event) or event.get("kind") == "turn_end":
                self._first = event
                return

    async def _failure(self, event: dict[str, Any]) -> str:
        if event.get("kind") == "session":  # the process ended under the turn
            message = f"the agent exited (code {event.get('exit_code')}) before it finished"
        else:
            message = event.get("message") or "the agent failed"
        self.failure = await self.conversation.with_agent_log(message)
        return self.failure

    async def events_until_end(self) -> AsyncIterator[ir.Event]:
        """Neutral events as the agent speaks, ending with its turn's end; a failed turn (ACP
        error, the process gone) raises BridgeError 502 with the agent's own words. Whoever
        reads it calls `end()` when done (whole, stream)."""
        while True:
            event = await self._next()
            kind = event.get("kind")
            if kind == "error":
                await self._failure(event)
            elif kind == "session":
                raise ir.BridgeError(502, await self._failure(event))
            elif kind == "turn_end":
                stop = event.get("stop_reason", "")
                if stop == "error":
                    raise ir.BridgeError(502, self.failure or "the agent's turn failed")
                for ev in self.events.finish(stop, event.get("usage")):
                    yield ev
                return
            else:
                for ev in self.events.feed(event):
                    yield ev

    async def whole(self) -> dict[str, Any]:
        try:
            async with contextlib.aclosing(self.events_until_end()) as events:
                collected = [ev async for ev in events]
        finally:
            await self.end()
        resp = ir.collect(collected, self.route.agent)
        resp.id = self.response_id
        return dialects.get(self.route.dialect).encode_response(resp)

    async def stream(self, encoder: Any) -> AsyncGenerator[bytes]:
        try:
            async with contextlib.aclosing(self.events_until_end()) as events:
                async for ev in events:
                    yield encoder.encode(ev)
        except ir.BridgeError as exc:  # after the 200: the dialect's own error event
            yield encoder.encode(ir.Error(exc.status, exc.message))
            return
        finally:
            await self.end()  # also when the client left mid-stream
        yield encoder.close()

    async def end(self) -> None:
        """Always runs, once, whoever asks first: a turn still going (the client left) is
        cancelled at once; a one-shot session's process ends with its request. Shielded: the
        request's own cancellation, which is often why it runs, does not cut it short."""
        if self._ending is None:
            self._ending = asyncio.ensure_future(self._end())
        await asyncio.shield(self._ending)

    async def _end(self) -> None:
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None
        if self._prompt is not None and not self._prompt.done():
            # session/cancel goes out at once; the process (one-shot) only ends after the turn
            # has ended, or the agent would never hear it.
            with contextlib.suppress(Exception):
                await self.conversation.cancel_running(CANCEL_WAIT_S)
        await self.conversation.turn_ended(self._prompt)


def _response_id(dialect: str) -> str:
    prefix = {"openai-responses": "resp_", "anthropic": "msg_"}.get(dialect, "chatcmpl-")
    return ir.new_id(prefix)
