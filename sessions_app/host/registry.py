"""The process host's one small interface: start, find, watch and stop hosted sessions.

Consumers, services, the agent-as-API and subagents use only what is here and the public methods
of the objects it returns:

- terminals: `start_terminal`, `attach_terminal` → a `TerminalView` (write, resize, detach),
  `type_into_terminal`;
- chats: `start_chat`, `chat(session_id)` → an `AcpSession` (subscribe → replay + live, prompt,
  cancel, answer_permission, permission_mode, busy, agent_info, exited);
- both: `stop`, `stop_soon` (in the background), `stop_all` (at shutdown, `host.on_exit:
  "stop"`), `let_go` (at shutdown, `"keep"`: the holder keeps them), `held` and `take_back_*`
  (at start: the sessions a holder kept while svc was away; a socket opened meanwhile waits
  for the start to finish, Runtime.until_started).

Processes are held by the holder (holder/, contract §17) so they outlive svc; with SVC_HOLDER=0,
or when no holder can be started, they are svc's own children (host/direct.py) and end with it.
One `ProcessHost` belongs to the runtime and lives on the daemon's event loop, so its
dictionaries need no locks. Ended terminals stay a while so a reconnecting viewer still gets their
scrollback and exit code.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from holder.client import HolderClient, HolderError, Stream
from sessions_app.host import acp_loading, processes
from sessions_app.host.activity import Activity
from sessions_app.host.direct import DirectPipes, DirectPty
from sessions_app.host.fanout import Flow, SendBytes, SendJson
from sessions_app.host.pty import SCROLLBACK_BYTES, PtySession, TerminalView
from sessions_app.host.resuming import ResumesAtStart

if TYPE_CHECKING:
    from sessions_app.host.acp import AcpSession, OnExit, OnIdle, Store
    from sessions_app.selectors import ChatPosition

logger = logging.getLogger(__name__)

KEEP_ENDED = 32


class ProcessHost:
    def __init__(
        self,
        activity: Activity | None = None,
        holder: HolderClient | None = None,
        *,
        on_idle: OnIdle | None = None,
    ) -> None:
        self.activity = activity or Activity()
        self.holder = holder  # None: hosted processes are svc's own children
        self._terminals: dict[str, PtySession] = {}
        self._ended: collections.deque[str] = collections.deque()
        self._chats: dict[str, AcpSession] = {}
        self._stopping: set[asyncio.Task] = set()
        self._prompting: set[asyncio.Task] = set()  # prompts waiting for their chat's turn
        # One resume at a time: two requests that find a chat ended must not start it twice.
        self.resume_lock = asyncio.Lock()
        self._stopped_by: dict[str, str] = {}  # who asked a session to stop ("svc", "user")
        self.resuming = ResumesAtStart()  # chats this start resumes (host.resume_on_start)
        # Given to every chat: what runs when it becomes idle (the composition root gives
        # sessions_app/prompt_queue.py's `on_idle`, which sends the prompts that wait).
        self.on_idle = on_idle

    # --- terminals -----------------------------------------------------------------------------

    async def start_terminal(
        self,
        session_id: str,
        *,
        argv: tuple[str, ...],
        env: dict[str, str],
        cwd: str,
        cols: int,
        rows: int,
        on_exit: OnExit,
        preface: bytes = b"",
    ) -> int:
        """`preface`: output to show above the process's own (a resumed terminal's old
        scrollback), kept in the holder's scrollback with it."""
        argv = processes.with_default_signals(("setsid", "-c", *argv))
        session = self._terminal(session_id, on_exit)
        stream: Stream | DirectPty
        if await self._holder_up():
            assert self.holder is not None
            await self.holder.spawn(
                session_id,
                kind="pty",
                argv=argv,
                env=env,
                cwd=cwd,
                cols=cols,
                rows=rows,
                preface=preface,
            )
            stream = await self.holder.attach(session_id, 0)
        else:
            stream = contextvars.Context().run(DirectPty, argv, env, cwd, cols, rows)
            session.scrollback.append(preface)
        self._run(session, stream)
        return session.pid

    async def output_of_before(self, session_id: str) -> bytes:
        """The last scrollback a holder kept of a session whose process is gone (a reboot, the
        holder stopped): what a resumed terminal shows above its new output."""
        if self.holder is None:
            return b""
        before = await asyncio.to_thread(self.holder.journal_tail, session_id, SCROLLBACK_BYTES)
        await self.holder.forget(session_id)  # an ended one a holder still keeps
        return before

    async def take_back_terminal(self, session_id: str, *, on_exit: OnExit) -> int:
        """A terminal the holder kept while svc was away: its whole scrollback, then live."""
        assert self.holder is not None
        session = self._terminal(session_id, on_exit)
        self._run(session, await self.holder.attach(session_id, 0))
        return session.pid

    def _terminal(self, session_id: str, on_exit: OnExit) -> PtySession:
        async def ended(sid: str, code: int | None) -> None:
            self._remember_ended(sid)
            if session.lost:  # its holder went away, and the PTY with it
                self._stopped_by.setdefault(sid, "interrupted")
            try:
                await on_exit(sid, code)
            finally:
                self._stopped_by.pop(sid, None)
                if self.holder is not None and session.held and not session.lost:
                    await self.holder.forget(sid)

        session = PtySession(session_id, ended)
        return session

    async def let_down(self, session_id: str) -> None:
        """A held session no live session claims (it ended, or was removed, while svc was
        away): hung up, and forgotten once it has ended."""
        if self.holder is None:
            return
        try:
            await self.holder.request("hangup", id=session_id)
            await self.holder.forget(session_id)  # refused while it still runs; next start
        except HolderError as exc:
            logger.warning("could not let go of held session %s: %s", session_id, exc)

    def _run(self, session: PtySession, stream: Stream | DirectPty) -> None:
        # A fresh context: tasks started here must not keep the caller's (a request's, soon
        # gone) context alive.
        contextvars.Context().run(session.run, stream)
        self._terminals[session.session_id] = session

    async def _holder_up(self) -> bool:
        """Whether processes are to be held: a holder answers (started when none runs). One
        that cannot be started is logged, and svc hosts the process itself."""
        if self.holder is None:
            return False
        try:
            return await self.holder.connect(start=True)
        except (HolderError, OSError) as exc:
            logger.warning("no holder (%s): this session ends when svc does", exc)
            return False

    async def held(self) -> dict[str, dict]:
        """What a holder kept while svc was away, by session id (none when no holder runs)."""
        if self.holder is None or not self.holder.running():
            return {}
        try:
            if not await self.holder.connect(start=False):
                return {}
            return {s["id"]: s for s in await self.holder.sessions()}
        except (HolderError, OSError) as exc:
            logger.warning("could not ask the holder what it holds: %s", exc)
            return {}

    def _remember_ended(self, session_id: str) -> None:
        self._ended.append(session_id)
        while len(self._ended) > KEEP_ENDED:
            self._terminals.pop(self._ended.popleft(), None)

    def attach_terminal(
        self, session_id: str, send_bytes: SendBytes, send_json: SendJson, flow: Flow
    ) -> TerminalView | None:
        """A new viewer: the scrollback frame, the state frame, then live output paced by `flow`.
        None when svc hosts no such terminal (ended before a restart)."""
        session = self._terminals.get(session_id)
        if session is None:
            return None
        return TerminalView(session, session.attach(send_bytes, send_json, flow))

    def type_into_terminal(self, session_id: str, text: str) -> bool:
        """Type `text` into a running terminal, then Enter, without being one of its viewers
        (review comments for a terminal agent); False when it is not running."""
        session = self._terminals.get(session_id)
        if session is None or session.exited.is_set():
            return False
        session.paste(text)
        return True

    def terminal_exit_code(self, session_id: str) -> int | None:
        session = self._terminals.get(session_id)
        return session.exit_code if session is not None else None

    # --- chats ---------------------------------------------------------------------------------

    async def start_chat(
        self,
        session_id: str,
        *,
        agent: str,
        argv: tuple[str, ...],
        env: dict[str, str],
        cwd: str,
        store: Store,
        on_exit: OnExit,
        resume_id: str = "",
        stderr_path: Path | None = None,
        offset: int = 0,
        permission_timeout_s: float = 60.0,
        start_timeout_s: float = 60.0,
    ) -> tuple[int, str]:
        """Start the agent and its ACP session — a new one, or with `resume_id` the agent's
        earlier session when it can load sessions; returns (pid, the agent's own session id).
        `offset`: where the offsets of its output start (acp_link: after its earlier process's)."""
        chat = await self._chat(session_id, agent, store, on_exit, permission_timeout_s)
        chat.start_timeout_s = start_timeout_s
        argv = processes.with_default_signals(argv)
        stderr = str(stderr_path) if stderr_path is not None else ""

        async def launch() -> int:
            stream: Stream | DirectPipes
            if await self._holder_up():
                assert self.holder is not None
                await self.holder.spawn(
                    session_id,
                    kind="pipe",
                    argv=argv,
                    env=env,
                    cwd=cwd,
                    stderr=stderr,
                    offset=offset,
                )
                stream = await self.holder.attach(session_id, -1)
            else:
                stream = await DirectPipes.spawn(argv, env, cwd, stderr, offset)
            return await chat.start(stream, cwd, resume_id)

        pid = await asyncio.get_running_loop().create_task(launch(), context=contextvars.Context())
        self._chats[session_id] = chat
        return pid, chat.agent_session_id

    async def take_back_chat(
        self,
        session_id: str,
        *,
        agent: str,
        store: Store,
        on_exit: OnExit,
        agent_session_id: str,
        position: ChatPosition,
        away_until: int = -1,
        permission_timeout_s: float = 60.0,
    ) -> int:
        """A chat the holder kept while svc was away (AcpSession.take_back); `away_until`: the
        end of its journal as the holder listed it."""
        assert self.holder is not None
        chat = await self._chat(session_id, agent, store, on_exit, permission_timeout_s)
        stream = await self.holder.attach(session_id, -1)
        taking = chat.take_back(
            stream, agent_session_id=agent_session_id, position=position, away_until=away_until
        )
        pid = await asyncio.get_running_loop().create_task(taking, context=contextvars.Context())
        self._chats[session_id] = chat
        return pid

    async def _chat(
        self,
        session_id: str,
        agent: str,
        store: Store,
        on_exit: OnExit,
        permission_timeout_s: float,
    ) -> AcpSession:
        session_class = await acp_loading.acp_session_class()

        async def ended(sid: str, code: int | None) -> None:
            self._chats.pop(sid, None)
            if chat.lost:  # its holder went away, and the agent's pipes with it
                self._stopped_by.setdefault(sid, "interrupted")
            try:
                await on_exit(sid, code)
            finally:
                self._stopped_by.pop(sid, None)
                if self.holder is not None and chat.held and not chat.lost:
                    await self.holder.forget(sid)

        chat = session_class(
            session_id,
            agent,
            store=store,
            on_exit=ended,
            activity=self.activity,
            permission_timeout_s=permission_timeout_s,
            on_idle=self.on_idle,
        )
        return chat

    def chat(self, session_id: str) -> AcpSession | None:
        return self._chats.get(session_id)

    async def chat_after_resume(self, session_id: str, wait_s: float) -> AcpSession | None:
        """The chat; one this start is still resuming, once it is (at most `wait_s` s)."""
        await self.resuming.wait(session_id, wait_s)
        return self._chats.get(session_id)

    # --- both ----------------------------------------------------------------------------------

    def hosts(self, session_id: str) -> bool:
        return session_id in self._terminals or session_id in self._chats

    def stopped_by(self, session_id: str) -> str:
        """Who asked this session to stop ("svc" at shutdown, "user"); "" when nobody did."""
        return self._stopped_by.get(session_id, "")

    async def stop(self, session_id: str, *, by: str = "") -> bool:
        """Stop a hosted session's whole process tree; False when svc hosts no such process.
        `by` is remembered for the session's end (`stopped_by`)."""
        if by and self.hosts(session_id):
            self._stopped_by.setdefault(session_id, by)
        if (term := self._terminals.get(session_id)) is not None:
            await term.stop()
            return True
        if (acp := self._chats.get(session_id)) is not None:
            await acp.stop()
            return True
        return False

    def prompt_soon(self, session_id: str, text: str) -> bool:
        """Send `text` as the chat's next prompt, after the turn it is in, and return at once;
        False when svc hosts no such chat."""
        chat = self._chats.get(session_id)
        if chat is None:
            return False
        task = asyncio.get_running_loop().create_task(
            chat.prompt_when_idle(text), context=contextvars.Context()
        )
        self._prompting.add(task)
        task.add_done_callback(self._prompting.discard)
        return True

    def in_background(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run `work` on the daemon's loop without waiting for it (resuming chats at start);
        svc's stop waits for it with the stops."""
        task = asyncio.get_running_loop().create_task(work, context=contextvars.Context())
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def stop_soon(self, session_id: str, *, by: str = "") -> bool:
        """Start stopping a hosted session and return at once (its on_exit records the end);
        False when svc hosts no such process."""
        if not self.hosts(session_id):
            return False
        task = asyncio.get_running_loop().create_task(
            self.stop(session_id, by=by), context=contextvars.Context()
        )
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)
        return True

    def live_count(self) -> int:
        terminals = sum(1 for s in self._terminals.values() if not s.exited.is_set())
        return terminals + len(self._chats)

    async def stop_all(self) -> int:
        """Every hosted process tree, at shutdown; returns how many were still running."""
        sessions = [s for s in self._live() if not s.let_go_done]
        for session in sessions:
            self._stopped_by.setdefault(session.session_id, "svc")
        await asyncio.gather(*(s.stop() for s in sessions), return_exceptions=True)
        await asyncio.gather(*self._stopping, return_exceptions=True)
        return len(sessions)

    async def let_go(self) -> tuple[int, int]:
        """At svc's stop with `host.on_exit: "keep"`: svc stops reading the held sessions and
        the holder keeps them for the next start; a session svc hosts itself (no holder) is
        stopped. Returns (kept, stopped)."""
        kept = [s for s in self._live() if s.held]
        for session in kept:
            await session.let_go()
        stopped = await self.stop_all()
        if self.holder is not None:
            await self.holder.close()
        return len(kept), stopped

    def _live(self) -> list[PtySession | AcpSession]:
        live: list[PtySession | AcpSession] = [
            s for s in self._terminals.values() if not s.exited.is_set()
        ]
        return live + list(self._chats.values())
