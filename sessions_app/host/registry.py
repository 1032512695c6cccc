"""The host's one small interface: start, find and stop hosted sessions by session id.

Everything here runs on the daemon's event loop (services reach it through async_to_sync), so
the dictionaries need no locks. Ended terminals stay a while so a reconnecting viewer still gets
their scrollback and exit code.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
from typing import Any

from sessions_app.host import shutdown
from sessions_app.host.pty import OnExit, PtySession

logger = logging.getLogger(__name__)

KEEP_ENDED = 32

_terminals: dict[str, PtySession] = {}
_ended: collections.deque[str] = collections.deque()
_chats: dict[str, Any] = {}  # session id → acp.AcpSession


async def start_terminal(
    session_id: str,
    *,
    argv: tuple[str, ...],
    env: dict[str, str],
    cwd: str,
    cols: int,
    rows: int,
    on_exit: OnExit,
) -> int:
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


def terminal(session_id: str) -> PtySession | None:
    return _terminals.get(session_id)


def register_chat(session_id: str, chat: Any) -> None:
    _chats[session_id] = chat


def chat(session_id: str) -> Any:
    return _chats.get(session_id)


def forget_chat(session_id: str) -> None:
    _chats.pop(session_id, None)


async def stop(session_id: str) -> bool:
    """Stop a hosted session's whole process tree; False when svc hosts no such process."""
    if (term := _terminals.get(session_id)) is not None:
        await term.stop()
        return True
    if (acp := _chats.get(session_id)) is not None:
        await acp.stop()
        return True
    return False


async def stop_all() -> None:
    sessions = [s for s in _terminals.values() if not s.exited.is_set()]
    sessions += list(_chats.values())
    if sessions:
        logger.info("stopping %d hosted sessions", len(sessions))
    await asyncio.gather(*(s.stop() for s in sessions), return_exceptions=True)


shutdown.register(stop_all)
