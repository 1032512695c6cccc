"""Chat sessions: svc as the client of an agent's ACP stdio server (agent-client-protocol SDK).

Every update becomes an event `{"kind", "session_id", "seq", ...}`: stored first (through the
injected `store`), then handed to the subscribed chat clients, so a client that reopens the
session and replays the stored events never misses or repeats one. Permission requests go to the
subscribed clients and are refused when nobody answers within `permission_timeout_s`.

The agent's stdio is held by the holder (contract §17) and read through `acp_link.Link`: when
svc starts again it takes the chat back (`take_back`) where the last svc left off — updates it
had stored are not stored twice, a turn that ended meanwhile is recorded once, and what the
agent asked meanwhile is asked again.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp import PROTOCOL_VERSION, connect_to_agent, text_block
from acp.schema import ClientCapabilities, Implementation

from sessions_app import signals
from sessions_app.host import processes, resume
from sessions_app.host.acp_client import HostClient
from sessions_app.host.acp_link import AgentStream, Link
from sessions_app.host.acp_permissions import Answer, AskingPermission
from sessions_app.host.acp_taken_back import TakingBack
from sessions_app.host.activity import Activity
from sessions_app.host.agent_errors import failure_text
from sessions_app.host.subscription import ChatSubscription, Deliver, History

# This module imports the ACP SDK at its top, so it is loaded only when a chat starts
# (host/acp_loading.py says why and how).

logger = logging.getLogger(__name__)


EOF_GRACE_S = 0.5  # for an agent to exit by itself once its stdin closes
DRAIN_STALL_S = 5.0  # an exited agent's updates are stored while one is stored this often

# (session id, kind, payload, src: the offset of the agent message it came from, if any) → seq
Store = Callable[[str, str, dict[str, Any], int | None], Awaitable[int]]
OnExit = Callable[[str, int | None], Awaitable[None]]  # None: the holder went away
OnIdle = Callable[["AcpSession"], Awaitable[None]]  # what runs when a chat becomes idle


class AcpSession(AskingPermission, TakingBack):
    def __init__(
        self,
        session_id: str,
        agent: str,
        *,
        store: Store,
        on_exit: OnExit,
        activity: Activity,
        permission_timeout_s: float = 60.0,
        start_timeout_s: float = 60.0,
        on_idle: OnIdle | None = None,
    ) -> None:
        self.session_id, self.agent = session_id, agent
        self.activity = activity
        self.permission_timeout_s = permission_timeout_s
        self.start_timeout_s = start_timeout_s
        self._store, self._on_exit = store, on_exit
        self._subscribers: set[ChatSubscription] = set()
        self.permission_mode = "ask"  # ask | allow | deny
        self.busy = False
        self.idle = asyncio.Event()  # set between turns
        self.idle.set()
        # Called whenever the chat becomes idle (sessions_app/prompt_queue.py sends what waits).
        self.on_idle = on_idle
        # Tasks working on this chat that nobody awaits (its on_idle calls, a queued prompt's
        # turn): held here until they end, since the loop keeps only weak references.
        self._background: set[asyncio.Task[Any]] = set()
        self.agent_session_id = ""
        self.agent_info: dict[str, Any] = {}
        self._pending: dict[str, tuple[asyncio.Future[Answer], set[str]]] = {}
        self._requests: dict[str, dict[str, Any]] = {}  # the events of the pending requests
        self._emit_lock = asyncio.Lock()
        self.exited = asyncio.Event()
        self.updating = 0  # session/update notifications being emitted right now
        self.exit_code: int | None = None
        self._replaying = False
        self.replayed = 0  # updates dropped as the replay of a loaded session
        self.continued: resume.Continued | None = None  # how a resumed chat went on
        self.held = False  # by a holder, which keeps it when svc stops
        self.let_go_done = False
        self.stopping = False
        self.lost = False  # the stream ended without an exit: the holder is gone
        # A taken-back chat's permission requests, by offset (selectors.ChatPosition).
        self._asked: dict[int, dict[str, Any]] = {}
        self._decided: dict[int, dict[str, Any]] = {}

    async def start(self, stream: AgentStream, cwd: str, resume_id: str = "") -> int:
        """A new agent process on `stream`: ACP's handshake, then a new session — or with
        `resume_id` the agent's earlier one (see _handshake)."""
        await self._connect(stream, stored_upto=-1)
        try:
            await asyncio.wait_for(self._handshake(cwd, resume_id), self.start_timeout_s)
        except BaseException:
            await self.stop()
            raise
        await self._publish_runtime()
        return self.pid

    async def _connect(self, stream: AgentStream, *, stored_upto: int) -> None:
        self.stream, self.pid = stream, stream.pid
        self.held = stream.held
        self.link = Link(stream, stored_upto=stored_upto, on_orphan=self._orphan_answer)
        self.conn = connect_to_agent(HostClient(self), self.link)
        self._watcher = asyncio.get_running_loop().create_task(self._watch_exit())

    async def _handshake(self, cwd: str, resume_id: str) -> None:
        init = await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="svc", version="0.1.0"),
        )
        if init.agent_info is not None:
            self.agent_info = {"name": init.agent_info.name, "version": init.agent_info.version}
        # A resumed chat continues the agent's own session the best way it offers (contract
        # §17, host/resume.py); failing that, a new session that the next prompt primes.
        tried: list[str] = []
        for way in resume.ways(init.agent_capabilities) if resume_id else []:
            # session/load replays the conversation as updates; svc already stored it: dropped.
            self._replaying = way == "session/load"
            try:
                if way == "session/resume":
                    await self.conn.resume_session(cwd=cwd, session_id=resume_id, mcp_servers=[])
                else:
                    await self.conn.load_session(cwd=cwd, session_id=resume_id, mcp_servers=[])
                    await resume.replay_over(lambda: self.replayed)  # some replay after answering
            except Exception as exc:  # the agent's refusal (it lost the session): the next way
                tried.append(f"{way}: {failure_text(exc)}")
                continue
            finally:
                self._replaying = False
            self.agent_session_id = resume_id
            self.continued = resume.Continued(way, resume_id, tried)
            return
        new = await self.conn.new_session(cwd=cwd, mcp_servers=[])
        self.agent_session_id = new.session_id
        if resume_id:
            self.continued = resume.Continued("summary", new.session_id, tried)

    async def _publish_runtime(self, current_turn: str | None = None) -> None:
        if self.link.ended.is_set():  # its agent exited: _watch_exit takes its entry away
            return
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
        self, kind: str, payload: dict[str, Any], *, store: bool = True, src: int | None = None
    ) -> dict[str, Any]:
        """Store, then deliver; `src`: the agent message it comes from (acp_link)."""
        if self._replaying:
            self.replayed += 1
            return {}
        async with self._emit_lock:  # stored order == delivered order
            seq = await self._store(self.session_id, kind, payload, src) if store else None
            event = self.event(kind, payload, seq)
            for subscription in list(self._subscribers):
                subscription.receive(event)
        return event

    async def subscribe(
        self,
        deliver: Deliver,
        history: History | None = None,
        *,
        showing: bool = True,
        after: int = 0,
    ) -> ChatSubscription:
        """A client of this chat; `history` reads the stored events (None: live events only)
        after seq `after` (what the client already has); `showing`: whether it counts as
        showing the chat to a person (see `shown`)."""
        subscription = ChatSubscription(self, deliver, showing=showing)
        self._subscribers.add(subscription)
        if history is not None:
            subscription.set_history(await history(), after=after)
        return subscription

    def unsubscribe(self, subscription: ChatSubscription) -> None:
        self._subscribers.discard(subscription)

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
            sent = self.continued.primed(text) if self.continued else text  # host/resume.py
            response = await self.conn.prompt(
                session_id=self.agent_session_id, prompt=[text_block(sent)]
            )
            if self.continued:
                self.continued.primer = ""  # the summary goes with one prompt
            stop_reason = str(response.stop_reason)
            ended: dict[str, Any] = {"stop_reason": stop_reason}
            if response.usage is not None:  # the agent's own token counts, when it gives them
                ended["usage"] = response.usage.model_dump(mode="json", exclude_none=True)
            await self.emit("turn_end", ended, src=self.link.turn_src)
            self.link.turn_done()
            self._turn_ended(stop_reason)
            return stop_reason
        except Exception as exc:
            if self.let_go_done:  # svc stops and the holder keeps the turn going: not an end
                return "let go"
            await self._turn_failed(exc, src=self.link.turn_src)
            self.link.turn_done()  # an error answer is the turn's end too: acknowledged now
            return "error"
        finally:
            self.busy = False
            self._now_idle()
            if not self.exited.is_set():
                await self._publish_runtime()

    def shown(self) -> bool:
        """Whether some client shows this chat to a person right now: a dashboard tab showing
        it, or a client that never said it does not (contract §15). A chat channel never
        counts — it is not a dashboard; a closed client is no longer subscribed."""
        return any(subscription.showing for subscription in self._subscribers)

    def _now_idle(self) -> None:
        self.idle.set()
        if self.on_idle is None or self.link.ended.is_set() or self.let_go_done or self.stopping:
            return  # ended (or ending): what is queued waits for a resume
        # A context of its own: a chat started inside a request (async_to_sync) would otherwise
        # lend this task the request thread's executor, gone once the request ends.
        call = asyncio.get_running_loop().create_task(
            self.on_idle(self), context=contextvars.Context()
        )
        self.keep(call)

    def keep(self, task: asyncio.Task[Any]) -> None:
        """Hold `task`, which works on this chat and which nobody awaits, until it ends."""
        if not task.done():
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _turn_failed(self, exc: BaseException, *, src: int | None = None) -> None:
        """A failed prompt's events; `src`: the agent's error answer, stored with the turn's end
        (read again after a restart, a stored end is not stored twice)."""
        failed = {"message": f"prompt failed: {failure_text(exc)}", "log": True}
        await self.emit("error", failed)
        await self.emit("turn_end", {"stop_reason": "error"}, src=src)
        self._turn_ended("error")

    def _turn_ended(self, stop_reason: str) -> None:
        if not self.shown():  # nobody sees this turn end: tell its owner (contract §15)
            signals.turn_ended.send_robust(
                sender=AcpSession,
                session_id=self.session_id,
                agent=self.agent,
                stop_reason=stop_reason,
            )

    async def prompt_when_idle(self, text: str) -> None:
        """`text` as the next prompt, after the turn under way (the person typing in the chat
        goes first, as on a channel); a failure is logged, never raised."""
        while self.busy:
            await self.idle.wait()
        try:
            await self.prompt(text)
        except Exception:
            logger.exception("a prompt for session %s could not be sent", self.session_id)

    async def cancel(self) -> None:
        # ACP: the client answers pending permission requests of a cancelled turn "cancelled".
        for future, _ in self._pending.values():
            if not future.done():
                future.set_result((None, {"surface": "cancelled", "who": "the turn was cancelled"}))
        await self.conn.cancel(session_id=self.agent_session_id)

    # --- end -------------------------------------------------------------------------------

    async def _watch_exit(self) -> None:
        await self.link.ended.wait()
        if self.let_go_done:  # svc stopped; the holder keeps the agent for the next start
            return
        self.exit_code = self.link.exit_code
        if self.exit_code is None and not self.link.closed:
            # The holder went away with the agent's pipes: end what is left of its tree.
            self.lost = True
            await processes.kill_session(self.pid, 0.5)
        self.activity.remove(self.session_id)
        await self.activity.publish()
        await self._drain()
        await self._end_inherited_turn()  # a taken-back turn whose agent exited meanwhile
        with contextlib.suppress(Exception):
            await self.conn.close()
        try:
            await self._on_exit(self.session_id, self.exit_code)
        finally:
            self.exited.set()
            ended = {"status": "exited", "exit_code": self.exit_code}
            await self.emit("session", ended, store=False)

    async def _drain(self, stall_s: float = DRAIN_STALL_S) -> None:
        """Closing the connection cancels its handlers: first let the updates the agent wrote
        before it exited be stored — its last words, or all it said while svc was away when a
        taken-back chat reads its exit right after them — for as long as storing goes on.
        Every line was handed to a handler before the stream's end was seen."""
        loop = asyncio.get_running_loop()
        left, since = self.updating, loop.time()
        while self.updating and loop.time() - since < stall_s:
            await asyncio.sleep(0.005)
            if self.updating != left:
                left, since = self.updating, loop.time()

    async def _updates_stored(self) -> None:
        while self.updating:  # noqa: ASYNC110 — polled: a handful of handlers, briefly
            await asyncio.sleep(0.005)

    async def stop(self, grace: float = 1.0) -> None:
        if self.exited.is_set() or self.let_go_done:
            return
        self.stopping = True  # the turn it ends must not start the next (prompt_queue)
        self.stream.close_input()  # well-behaved agents exit at EOF, with their own status
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.exited.wait(), EOF_GRACE_S)
        await processes.kill_session(self.pid, grace)  # the rest of its tree (orphans included)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.exited.wait(), 3)

    async def let_go(self) -> None:
        """svc stops and the holder keeps the agent: stop reading, end nothing. A request of the
        agent's left unanswered is read again by the next svc (it was never acknowledged)."""
        self.let_go_done = True
        with contextlib.suppress(Exception):
            await self.conn.close()  # its reader too: nothing will see the stream end
        self._watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._watcher
