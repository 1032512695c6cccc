"""Chat sessions: svc as the client of an agent's ACP stdio server (agent-client-protocol SDK).

Every update becomes an event `{"kind", "session_id", "seq", ...}`: stored first (through the
injected `store`), then handed to the subscribed chat clients, so a client that reopens the
session and replays the stored events never misses or repeats one. Permission requests go to the
subscribed clients and are refused when nobody answers within `permission_timeout_s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from notifications_app import events as notices
from sessions_app.host import processes
from sessions_app.host.activity import Activity
from sessions_app.host.agent_errors import failure_text
from sessions_app.host.subscription import ChatSubscription, Deliver, History

if TYPE_CHECKING:
    from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

# The ACP SDK is imported where a chat starts, not at module level: its schema takes ~0.7 s to
# import, which every daemon start (and every test's) would pay before it could bind, though
# many daemons never host a chat.

logger = logging.getLogger(__name__)


STREAM_LIMIT = 50 << 20  # one ACP message may carry images or whole files
EOF_GRACE_S = 0.5  # for an agent to exit by itself once its stdin closes

Store = Callable[[str, str, dict[str, Any]], Awaitable[int]]
OnExit = Callable[[str, int], Awaitable[None]]


def update_event(update: Any) -> tuple[str, dict[str, Any]]:
    data = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    kind = data.pop("sessionUpdate", "update")
    if "kind" in data:  # a tool call's kind would shadow the event's own `kind`
        data["tool_kind"] = data.pop("kind")
    content = data.get("content")
    if kind.endswith("_chunk") and isinstance(content, dict) and content.get("type") == "text":
        data["text"] = content.get("text", "")
    return kind, data


class _HostClient:
    """The ACP `Client` side: updates and permission requests go to the chat session."""

    def __init__(self, chat: AcpSession) -> None:
        self.chat = chat

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.chat.updating += 1
        try:
            await self.chat.emit(*update_event(update))
        finally:
            self.chat.updating -= 1

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kw: Any
    ) -> RequestPermissionResponse:
        return await self.chat.ask_permission(tool_call, options)


class AcpSession:
    def __init__(
        self, session_id: str, agent: str, *, store: Store, on_exit: OnExit, activity: Activity,
        permission_timeout_s: float = 60.0, start_timeout_s: float = 60.0,
    ) -> None:  # fmt: skip
        self.session_id, self.agent = session_id, agent
        self.activity = activity
        self.permission_timeout_s = permission_timeout_s
        self.start_timeout_s = start_timeout_s
        self._store, self._on_exit = store, on_exit
        self._subscribers: set[ChatSubscription] = set()
        self.permission_mode = "ask"  # ask | allow | deny
        self.busy = False
        self.idle = asyncio.Event()  # set between turns: what a queued prompt waits on
        self.idle.set()
        self.agent_session_id = ""
        self.agent_info: dict[str, Any] = {}
        self._pending: dict[str, tuple[asyncio.Future[str | None], set[str]]] = {}
        self._requests: dict[str, dict[str, Any]] = {}  # the events of the pending requests
        self._emit_lock = asyncio.Lock()
        self.exited = asyncio.Event()
        self.updating = 0  # session/update notifications being emitted right now
        self.exit_code: int | None = None
        self._replaying = False

    async def start(
        self, argv: tuple[str, ...], env: dict[str, str], cwd: str, resume_id: str = "",
        stderr_path: Path | None = None,
    ) -> int:  # fmt: skip
        with _agent_log(stderr_path) as stderr:
            self.proc = await asyncio.create_subprocess_exec(
                *processes.with_default_signals(argv),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                env=env,
                start_new_session=True,  # its own session: stop reaches every descendant
                limit=STREAM_LIMIT,
            )
        self.pid = self.proc.pid
        await _load_sdk()
        from acp import connect_to_agent

        self.conn = connect_to_agent(_HostClient(self), self.proc.stdin, self.proc.stdout)
        self._watcher = asyncio.get_running_loop().create_task(self._watch_exit())
        try:
            await asyncio.wait_for(self._handshake(cwd, resume_id), self.start_timeout_s)
        except BaseException:
            await self.stop()
            raise
        await self._publish_runtime()
        return self.pid

    async def _handshake(self, cwd: str, resume_id: str) -> None:
        from acp import PROTOCOL_VERSION
        from acp.schema import ClientCapabilities, Implementation

        init = await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="svc", version="0.1.0"),
        )
        if init.agent_info is not None:
            self.agent_info = {"name": init.agent_info.name, "version": init.agent_info.version}
        if resume_id and init.agent_capabilities and init.agent_capabilities.load_session:
            # The agent replays the conversation as updates; svc already stored it, so drop them.
            self._replaying = True
            try:
                await self.conn.load_session(cwd=cwd, session_id=resume_id, mcp_servers=[])
            finally:
                self._replaying = False
            self.agent_session_id = resume_id
            return
        new = await self.conn.new_session(cwd=cwd, mcp_servers=[])
        self.agent_session_id = new.session_id

    async def _publish_runtime(self, current_turn: str | None = None) -> None:
        self.activity.put(
            self.session_id,
            agent=self.agent,
            agent_name=self.agent_info.get("name", ""),
            agent_version=self.agent_info.get("version", ""),
            agent_session_id=self.agent_session_id,
            busy=self.busy,
            current_turn=current_turn,
        )
        await self.activity.publish()

    # --- events ----------------------------------------------------------------------------

    def event(self, kind: str, payload: dict[str, Any], seq: int | None = None) -> dict[str, Any]:
        return {**payload, "kind": kind, "session_id": self.session_id, "seq": seq}

    async def emit(
        self, kind: str, payload: dict[str, Any], *, store: bool = True
    ) -> dict[str, Any]:
        if self._replaying:
            return {}
        async with self._emit_lock:  # stored order == delivered order
            seq = await self._store(self.session_id, kind, payload) if store else None
            event = self.event(kind, payload, seq)
            for subscription in list(self._subscribers):
                subscription.receive(event)
        return event

    async def subscribe(
        self, deliver: Deliver, history: History | None = None, *, showing: bool = True
    ) -> ChatSubscription:
        """A client of this chat; `history` reads the stored events (None: live events only);
        `showing`: whether it counts as showing the chat to a person (see `shown`)."""
        subscription = ChatSubscription(self, deliver, showing=showing)
        self._subscribers.add(subscription)
        if history is not None:
            subscription.set_history(await history())
        return subscription

    # --- turns -----------------------------------------------------------------------------

    async def prompt(self, text: str) -> str:
        if self.busy:
            raise RuntimeError("a turn is already running; cancel it or wait for turn_end")
        if self.exited.is_set():
            raise RuntimeError("the agent has exited; open a new chat session")
        self.busy = True
        self.idle.clear()
        await self._publish_runtime(current_turn=text[:200])
        try:
            await self.emit("user_message_chunk", {"text": text})
            from acp import text_block

            response = await self.conn.prompt(
                session_id=self.agent_session_id, prompt=[text_block(text)]
            )
            stop_reason = str(response.stop_reason)
            ended: dict[str, Any] = {"stop_reason": stop_reason}
            if response.usage is not None:  # the agent's own token counts, when it gives them
                ended["usage"] = response.usage.model_dump(mode="json", exclude_none=True)
            await self.emit("turn_end", ended)
            self._turn_ended(stop_reason)
            return stop_reason
        except Exception as exc:
            await self.emit(
                "error", {"message": f"prompt failed: {failure_text(exc)}", "log": True}
            )
            await self.emit("turn_end", {"stop_reason": "error"})
            self._turn_ended("error")
            return "error"
        finally:
            self.busy = False
            self.idle.set()
            if not self.exited.is_set():
                await self._publish_runtime()

    def shown(self) -> bool:
        """Whether some client shows this chat to a person right now: a dashboard tab showing
        it, or a client that never said it does not (contract §15). A chat channel never
        counts — it is not a dashboard; a closed client is no longer subscribed."""
        return any(subscription.showing for subscription in self._subscribers)

    def _turn_ended(self, stop_reason: str) -> None:
        if not self.shown():  # nobody sees this turn end: tell its owner (contract §15)
            notices.turn_ended(self.session_id, self.agent, stop_reason)

    async def cancel(self) -> None:
        # ACP: the client answers pending permission requests of a cancelled turn "cancelled".
        for future, _ in self._pending.values():
            if not future.done():
                future.set_result(None)
        await self.conn.cancel(session_id=self.agent_session_id)

    # --- permissions -----------------------------------------------------------------------

    async def ask_permission(
        self, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        ids = {o.option_id for o in options}
        if self.permission_mode in ("allow", "deny") or not self._subscribers:
            return await self._answer_by_policy(tool_call, options)
        request_id = uuid.uuid4().hex
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (future, ids)
        self._requests[request_id] = await self.emit(
            "permission_request",
            {
                "request_id": request_id,
                "tool_call": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
                "options": [
                    {"option_id": o.option_id, "name": o.name, "kind": str(o.kind)} for o in options
                ],
            },
        )
        asked = self._requests[request_id].get("tool_call", {})
        notices.permission_requested(self.session_id, self.agent, asked)  # contract §15
        try:
            chosen = await asyncio.wait_for(future, self.permission_timeout_s)
        except TimeoutError:
            chosen = None
        finally:
            self._pending.pop(request_id, None)
            self._requests.pop(request_id, None)
        resolved = {"request_id": request_id, "option_id": chosen, "answered": chosen is not None}
        await self.emit("permission_resolved", resolved)
        if chosen is None:
            return _refuse(options)
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=chosen, outcome="selected")
        )

    async def _answer_by_policy(
        self, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        """Answered without asking anyone (the mode says so, or nobody listens) — and said, so
        whoever reads the session later knows why the agent could or could not act."""
        allow = self.permission_mode == "allow"
        answer = (_choose(options, "allow") if allow else None) or _refuse(options)
        chosen = getattr(answer.outcome, "option_id", None)
        policy = self.permission_mode if self.permission_mode != "ask" else "nobody to ask"
        await self.emit("permission_resolved", {
            "request_id": None, "option_id": chosen, "answered": False, "policy": policy,
            "allowed": allow and chosen is not None,
            "tool_call": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
        })  # fmt: skip
        return answer

    def pending_requests(self) -> list[dict[str, Any]]:
        """Permission requests still waiting, for a client that (re)opens the session."""
        return [event for event in self._requests.values() if event]

    def answer_permission(self, request_id: str, option_id: str) -> str | None:
        """None when accepted, else why not."""
        pending = self._pending.get(request_id)
        if pending is None or pending[0].done():
            return f"no pending permission request {request_id!r}"
        if option_id not in pending[1]:
            return f"option_id must be one of {sorted(pending[1])}"
        pending[0].set_result(option_id)
        return None

    # --- end -------------------------------------------------------------------------------

    async def _watch_exit(self) -> None:
        returncode = await self.proc.wait()
        self.exit_code = processes.exit_code_of(returncode)
        # What it started and left behind (codex-acp's and Gemini CLI's helpers) goes with it.
        await processes.kill_session(self.pid, 0.5)
        self.activity.remove(self.session_id)
        await self.activity.publish()
        await self._drain()
        with contextlib.suppress(Exception):
            await self.conn.close()
        try:
            await self._on_exit(self.session_id, self.exit_code)
        finally:
            self.exited.set()
            ended = {"status": "exited", "exit_code": self.exit_code}
            await self.emit("session", ended, store=False)

    async def _drain(self, limit_s: float = 1.0) -> None:
        """Closing the connection cancels its handlers: first let what the agent wrote before
        it exited (its last words, often) be read to the end and stored, within a bound."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit_s
        # Polled: the StreamReader has no end-of-file event to wait on.
        while loop.time() < deadline and (self.updating or not self.proc.stdout.at_eof()):  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    async def stop(self, grace: float = 1.0) -> None:
        if self.exited.is_set():
            return
        with contextlib.suppress(Exception):
            self.proc.stdin.close()  # well-behaved agents exit at EOF, with their own status
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.exited.wait(), EOF_GRACE_S)
        await processes.kill_session(self.pid, grace)  # the rest of its tree (orphans included)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.exited.wait(), 3)


async def _load_sdk() -> None:
    """The ACP SDK, imported off the event loop the first time a chat starts."""
    if "acp.schema" not in sys.modules:
        await asyncio.to_thread(importlib.import_module, "acp.schema")
        await asyncio.to_thread(importlib.import_module, "acp")


def _agent_log(path: Path | None) -> BinaryIO:
    """The agent's stderr, kept for the user (stdout is the protocol)."""
    return path.open("ab") if path is not None else open(os.devnull, "ab")


def _choose(options: list[PermissionOption], prefix: str) -> RequestPermissionResponse | None:
    from acp.schema import AllowedOutcome, RequestPermissionResponse

    for option in options:
        if str(option.kind).startswith(prefix):
            return RequestPermissionResponse(
                outcome=AllowedOutcome(option_id=option.option_id, outcome="selected")
            )
    return None


def _refuse(options: list[PermissionOption]) -> RequestPermissionResponse:
    from acp.schema import DeniedOutcome, RequestPermissionResponse

    return _choose(options, "reject") or RequestPermissionResponse(
        outcome=DeniedOutcome(outcome="cancelled")
    )
