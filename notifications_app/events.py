"""Where notifications come from (contract §15): one small function per event, called from the
code where the event happens. Each returns at once and never raises into its caller: it hands a
coroutine to the runtime's notifier (`run_soon`), which reads what it needs (the session's name)
and notifies on the event loop.

Each is a receiver of the signal its sender declares (sessions_app.signals,
remote_app.signals), bound to the runtime's notifier, which connects them while it runs
(`receivers()`, hub.Notifier.start).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import PurePath
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from core.devices import describe_device
from remote_app import signals as remote
from sessions_app import selectors
from sessions_app import signals as sessions
from subagents_app import signals as subagent_signals
from subagents_app import subagents

logger = logging.getLogger(__name__)

# Exit codes svc's own stop produces (it hangs the session up, then kills what ignored that):
# a stop somebody asked for is not a failure.
STOP_EXIT_CODES = (129, 137)


class Admits(Protocol):
    def admit(self) -> int | None: ...


class Notifier(Protocol):
    """What the events use of the runtime's notifier (hub.py's `Notifier`, which imports this
    module to connect them to their signals)."""

    pairing_notices: Admits  # coalesce.Coalesce

    def run_soon(self, make: Callable[[], Awaitable[Any]]) -> None: ...

    async def notify(
        self, event: str, *, session_id: str | None = None, agent: str = "", title: str, body: str
    ) -> Any: ...


def _soon(notifier: Notifier, make: Callable[[], Awaitable[Any]]) -> None:
    try:
        notifier.run_soon(make)
    except Exception:
        logger.exception("could not hand a notification over")


def _session_label(session_id: str) -> tuple[str, str, Any]:
    """(the session's name as people know it, its agent, its row) — for a text."""
    session = selectors.session_get(session_id)
    if session is None:
        return f"session {session_id[:8]}", "", None
    where = PurePath(session.workspace).name or session.workspace
    name = session.title or f"{session.agent} in {where}"
    return f"{name} ({session_id[:8]})", session.agent, session


async def _label(session_id: str) -> tuple[str, str, Any]:
    return await database_sync_to_async(_session_label)(session_id)


# --- the events ----------------------------------------------------------------------------------


def permission_requested(
    notifier: Notifier, session_id: str, agent: str, tool_call: dict[str, Any], **_: Any
) -> None:
    """An agent asks to do something and waits for the answer."""
    what = str(tool_call.get("title") or tool_call.get("tool_kind") or "a tool call")[:150]

    async def make() -> None:
        label, _, _ = await _label(session_id)
        await notifier.notify(
            "permission_requested",
            session_id=session_id,
            agent=agent,
            title=f"{agent} asks permission: {what}",
            body=f"{label} waits for your answer: {what}",
        )

    _soon(notifier, make)


def turn_ended(notifier: Notifier, session_id: str, agent: str, stop_reason: str, **_: Any) -> None:
    """A chat turn ended while no client showed the session (`AcpSession.shown()`)."""

    async def make() -> None:
        label, _, _ = await _label(session_id)
        ended = "finished its turn" if stop_reason == "end_turn" else f"stopped ({stop_reason})"
        await notifier.notify(
            "turn_ended",
            session_id=session_id,
            agent=agent,
            title=f"{agent} {ended}",
            body=f"{label} waits for your next message.",
        )

    _soon(notifier, make)


async def session_exited(notifier: Notifier, session_id: str, **_: Any) -> None:
    """A session that failed or exited non-zero (its row is
    already marked) — unless svc's own stop ended it."""

    async def make() -> None:
        label, agent, session = await _label(session_id)
        if session is None:
            return
        code = session.exit_code
        failed = session.status == "failed" or (code not in (None, 0, *STOP_EXIT_CODES))
        if not failed:
            return
        said = f"exited with code {code}" if code is not None else "failed"
        await notifier.notify(
            "session_failed",
            session_id=session_id,
            agent=agent,
            title=f"{agent} {said}",
            body=f"{label} {said}; its agent log is in svc's logs folder.",
        )

    _soon(notifier, make)


def subagent_turn_completed(notifier: Notifier, turn_id: str, **_: Any) -> None:
    """A subagent turn finished: every subagent has its report."""

    async def make() -> None:
        turn = await sync_to_async(subagents.turn_snapshot)(turn_id)
        members = turn["subagents"]
        counts: dict[str, int] = {}
        for member in members:
            counts[member["status"]] = counts.get(member["status"], 0) + 1
        tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none"
        parent = turn["parent_session_id"]
        label, agent, _ = await _label(parent) if parent else ("", "", None)
        agents = ", ".join(sorted({m["agent"] for m in members}))
        await notifier.notify(
            "subagent_turn_completed",
            session_id=parent,
            agent=agent,
            title=f"{len(members)} subagent{'s' * (len(members) != 1)} finished ({tally})",
            body=(f"For {label}: " if label else "") + f"a {turn['mode']} turn of {agents} "
            "has ended; the reports are ready.",
        )

    _soon(notifier, make)


def pairing_requested(notifier: Notifier, device: str, host: str, **_: Any) -> None:
    """A browser asks to be paired (contract §13). Anyone who reaches the tunnel can ask, as
    often as they like, and writes the User-Agent and Host themselves: so at most one notice a
    minute (coalesce.Coalesce), and nothing of theirs in it but a description picked from a fixed
    list (`describe_device`) — `host` is left out. The code is not in it either: the owner reads
    it on the device asking, which is what makes approving it safe."""
    described = describe_device(device)

    async def make() -> None:
        # Decided before the first await: the loop runs one of these at a time.
        held = notifier.pairing_notices.admit()
        if held is None:
            return
        await notifier.notify(
            "pairing_requested",
            title="A device asks to pair with svc",
            body=f"Browser, as it describes itself: {described}. If this is you, enter the code "
            "it shows on the dashboard or with `manage.py pair CODE` within a minute; if not, "
            "ignore it: nothing is paired without that code." + _held_back(held),
        )

    _soon(notifier, make)


def _held_back(held: int) -> str:
    """How many were held back: exact up to 99, so a count is never a code-sized number."""
    if not held:
        return ""
    if held > 99:
        return " More than 99 pairing requests came since the last notice."
    return f" {held} more pairing request{'s' * (held != 1)} came since the last notice."


def receivers() -> list[tuple[Any, Callable[..., Any]]]:
    """(signal, receiver) for every event the notifier hears of; the apps declare the signals
    (sessions_app.signals, subagents_app.signals, remote_app.signals), the notifier connects to
    them while it runs."""

    return [
        (sessions.permission_requested, permission_requested),
        (sessions.turn_ended, turn_ended),
        (sessions.session_exited, session_exited),
        (subagent_signals.subagent_turn_completed, subagent_turn_completed),
        (remote.pairing_requested, pairing_requested),
    ]
