"""The process host's one small interface: start, find, watch and stop hosted sessions.

Consumers, services and (later) the agent-as-API and subagents use only what is here and the
public methods of the objects it returns:

- terminals: `start_terminal`, `attach_terminal` → a `TerminalView` (write, resize, detach);
- chats: `start_chat`, `chat(session_id)` → an `AcpSession` (subscribe → replay + live, prompt,
  cancel, answer_permission, permission_mode, busy, agent_info, exited);
- both: `stop`, `stop_soon` (in the background), `stop_all`.

Everything here runs on the daemon's event loop (services reach it through async_to_sync), so
the dictionaries need no locks. Ended terminals stay a while so a reconnecting viewer still gets
their scrollback and exit code.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
from dataclasses import dataclass
from pathlib import Path

from sessions_app.host import shutdown
from sessions_app.host.acp import AcpSession, OnExit, Store
from sessions_app.host.fanout import Flow, SendBytes, SendJson, Viewer
from sessions_app.host.pty import PtySession

logger = logging.getLogger(__name__)

KEEP_ENDED = 32

_terminals: dict[str, PtySession] = {}
_ended: collections.deque[str] = collections.deque()
_chats: dict[str, AcpSession] = {}


# --- terminals ---------------------------------------------------------------------------------


async def start_terminal(
    session_id: str, *, argv: tuple[str, ...], env: dict[str, str], cwd: str, cols: int,
    rows: int, on_exit: OnExit,
) -> int:  # fmt: skip
    async def ended(sid: str, code: int) -> None:
        _remember_ended(sid)
        await on_exit(sid, code)

    session = PtySession(session_id, ended)
    # A fresh context: callers come through async_to_sync from a request thread, and readers and
    # tasks registered here would otherwise keep that request's (soon dead) sync executor.
    pid = contextvars.Context().run(session.start, argv, env, cwd, cols, rows)
    _terminals[session_id] = session
    return pid


def _remember_ended(session_id: str) -> None:
    _ended.append(session_id)
    while len(_ended) > KEEP_ENDED:
        _terminals.pop(_ended.popleft(), None)


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


def attach_terminal(
    session_id: str, send_bytes: SendBytes, send_json: SendJson, flow: Flow
) -> TerminalView | None:
    """A new viewer: the scrollback frame, the state frame, then live output paced by `flow`.
    None when svc hosts no such terminal (ended before a restart)."""
    session = _terminals.get(session_id)
    if session is None:
        return None
    return TerminalView(session, session.attach(send_bytes, send_json, flow))


def terminal_exit_code(session_id: str) -> int | None:
    session = _terminals.get(session_id)
    return session.exit_code if session is not None else None


# --- chats -------------------------------------------------------------------------------------


async def start_chat(
    session_id: str, *, agent: str, argv: tuple[str, ...], env: dict[str, str], cwd: str,
    store: Store, on_exit: OnExit, resume_id: str = "", stderr_path: Path | None = None,
    permission_timeout_s: float = 60.0, start_timeout_s: float = 60.0,
) -> tuple[int, str]:  # fmt: skip
    """Start the agent and its ACP session — a new one, or with `resume_id` the agent's earlier
    session when it can load sessions; returns (pid, the agent's own session id)."""

    async def ended(sid: str, code: int) -> None:
        _chats.pop(sid, None)
        await on_exit(sid, code)

    chat = AcpSession(
        session_id, agent, store=store, on_exit=ended, permission_timeout_s=permission_timeout_s,
        start_timeout_s=start_timeout_s,
    )  # fmt: skip
    # A fresh context: callers come through async_to_sync from a request or consumer thread.
    task = asyncio.get_running_loop().create_task(
        chat.start(argv, env, cwd, resume_id, stderr_path), context=contextvars.Context()
    )
    pid = await task
    _chats[session_id] = chat
    return pid, chat.agent_session_id


def chat(session_id: str) -> AcpSession | None:
    return _chats.get(session_id)


# --- both --------------------------------------------------------------------------------------


async def stop(session_id: str) -> bool:
    """Stop a hosted session's whole process tree; False when svc hosts no such process."""
    if (term := _terminals.get(session_id)) is not None:
        await term.stop()
        return True
    if (acp := _chats.get(session_id)) is not None:
        await acp.stop()
        return True
    return False


_stopping: set[asyncio.Task] = set()


async def stop_soon(session_id: str) -> bool:
    """Start stopping a hosted session and return at once (its on_exit records the end);
    False when svc hosts no such process."""
    if session_id not in _terminals and session_id not in _chats:
        return False
    task = asyncio.get_running_loop().create_task(stop(session_id), context=contextvars.Context())
    _stopping.add(task)
    task.add_done_callback(_stopping.discard)
    return True


async def stop_all() -> None:
    sessions: list[PtySession | AcpSession] = [
        s for s in _terminals.values() if not s.exited.is_set()
    ]
    sessions += list(_chats.values())
    if sessions:
        logger.info("stopping %d hosted sessions", len(sessions))
    await asyncio.gather(*(s.stop() for s in sessions), return_exceptions=True)


shutdown.register(stop_all)
