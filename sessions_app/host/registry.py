"""The process host's one small interface: start, find, watch and stop hosted sessions.

Consumers, services, the agent-as-API and subagents use only what is here and the public methods
of the objects it returns:

- terminals: `start_terminal`, `attach_terminal` → a `TerminalView` (write, resize, detach),
  `type_into_terminal`;
- chats: `start_chat`, `chat(session_id)` → an `AcpSession` (subscribe → replay + live, prompt,
  cancel, answer_permission, permission_mode, busy, agent_info, exited);
- both: `stop`, `stop_soon` (in the background), `stop_all` (at shutdown).

One `ProcessHost` belongs to the runtime and lives on the daemon's event loop, so its
dictionaries need no locks. Ended terminals stay a while so a reconnecting viewer still gets their
scrollback and exit code.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
from dataclasses import dataclass
from pathlib import Path

from sessions_app.host.acp import AcpSession, OnExit, Store
from sessions_app.host.activity import Activity
from sessions_app.host.fanout import Flow, SendBytes, SendJson, Viewer
from sessions_app.host.pty import PtySession

logger = logging.getLogger(__name__)

KEEP_ENDED = 32


@dataclass
class TerminalView:
    """One viewer of a terminal: what it may do to the session."""

    session: PtySession
    viewer: Viewer

    def write(self, data: bytes) -> None:
        self.session.write(data)

    def resize(self, cols: int, rows: int) -> None:
        self.session.resize(cols, rows)

    async def detach(self) -> None:
        await self.session.detach(self.viewer)


class ProcessHost:
    def __init__(self, activity: Activity | None = None) -> None:
        self.activity = activity or Activity()
        self._terminals: dict[str, PtySession] = {}
        self._ended: collections.deque[str] = collections.deque()
        self._chats: dict[str, AcpSession] = {}
        self._stopping: set[asyncio.Task] = set()
        self._prompting: set[asyncio.Task] = set()  # prompts waiting for their chat's turn
        # One resume at a time: two requests that find a chat ended must not start it twice.
        self.resume_lock = asyncio.Lock()
        self._stopped_by: dict[str, str] = {}  # who asked a session to stop ("svc", "user")

    # --- terminals -----------------------------------------------------------------------------

    async def start_terminal(
        self, session_id: str, *, argv: tuple[str, ...], env: dict[str, str], cwd: str,
        cols: int, rows: int, on_exit: OnExit,
    ) -> int:  # fmt: skip
        async def ended(sid: str, code: int) -> None:
            self._remember_ended(sid)
            try:
                await on_exit(sid, code)
            finally:
                self._stopped_by.pop(sid, None)

        session = PtySession(session_id, ended)
        # A fresh context: readers and tasks registered here must not keep the caller's (a
        # request's, soon gone) context alive.
        pid = contextvars.Context().run(session.start, argv, env, cwd, cols, rows)
        self._terminals[session_id] = session
        return pid

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
        self, session_id: str, *, agent: str, argv: tuple[str, ...], env: dict[str, str],
        cwd: str, store: Store, on_exit: OnExit, resume_id: str = "",
        stderr_path: Path | None = None, permission_timeout_s: float = 60.0,
        start_timeout_s: float = 60.0,
    ) -> tuple[int, str]:  # fmt: skip
        """Start the agent and its ACP session — a new one, or with `resume_id` the agent's
        earlier session when it can load sessions; returns (pid, the agent's own session id)."""

        async def ended(sid: str, code: int) -> None:
            self._chats.pop(sid, None)
            try:
                await on_exit(sid, code)
            finally:
                self._stopped_by.pop(sid, None)

        chat = AcpSession(
            session_id, agent, store=store, on_exit=ended, activity=self.activity,
            permission_timeout_s=permission_timeout_s, start_timeout_s=start_timeout_s,
        )  # fmt: skip
        task = asyncio.get_running_loop().create_task(
            chat.start(argv, env, cwd, resume_id, stderr_path), context=contextvars.Context()
        )
        pid = await task
        self._chats[session_id] = chat
        return pid, chat.agent_session_id

    def chat(self, session_id: str) -> AcpSession | None:
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
            _prompt_when_idle(chat, text), context=contextvars.Context()
        )
        self._prompting.add(task)
        task.add_done_callback(self._prompting.discard)
        return True

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
        sessions: list[PtySession | AcpSession] = [
            s for s in self._terminals.values() if not s.exited.is_set()
        ]
        sessions += list(self._chats.values())
        for session in sessions:
            self._stopped_by.setdefault(session.session_id, "svc")
        await asyncio.gather(*(s.stop() for s in sessions), return_exceptions=True)
        await asyncio.gather(*self._stopping, return_exceptions=True)
        return len(sessions)


async def _prompt_when_idle(chat: AcpSession, text: str) -> None:
    # A turn already under way (the person typing in the chat) goes first, as on a channel.
    while chat.busy:
        await chat.idle.wait()
    try:
        await chat.prompt(text)
    except Exception:
        logger.exception("a prompt for session %s could not be sent", chat.session_id)
