"""Where notifications come from (contract §15): one small function per event, called from the
code where the event happens. Each returns at once and never raises into its caller: it hands a
coroutine to the runtime's notifier (`run_soon`), which reads what it needs (the session's name)
and notifies on the event loop.

This module is imported by the chat host at start-up, so it imports nothing heavy at the top.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import PurePath
from typing import Any

logger = logging.getLogger(__name__)

# Exit codes svc's own stop produces (it hangs the session up, then kills what ignored that):
# a stop somebody asked for is not a failure.
STOP_EXIT_CODES = (129, 137)


def _soon(make: Callable[[], Awaitable[Any]]) -> None:
    try:
        from svcproject.runtime import current_or_none

        runtime = current_or_none()
        notifier = getattr(runtime, "notifier", None)
        if notifier is not None:
            notifier.run_soon(make)
    except Exception:
        logger.exception("could not hand a notification over")


async def _notify(event: str, **fields: Any) -> None:
    from svcproject.runtime import current_or_none

    runtime = current_or_none()
    if runtime is not None:
        await runtime.notifier.notify(event, **fields)


def _session_label(session_id: str) -> tuple[str, str, Any]:
    """(the session's name as people know it, its agent, its row) — for a text."""
    from sessions_app import selectors

    session = selectors.session_get(session_id)
    if session is None:
        return f"session {session_id[:8]}", "", None
    where = PurePath(session.workspace).name or session.workspace
    name = session.title or f"{session.agent} in {where}"
    return f"{name} ({session_id[:8]})", session.agent, session


async def _label(session_id: str) -> tuple[str, str, Any]:
    from channels.db import database_sync_to_async

    return await database_sync_to_async(_session_label)(session_id)


# --- the events ----------------------------------------------------------------------------------


def permission_requested(session_id: str, agent: str, tool_call: dict[str, Any]) -> None:
    """An agent asks to do something and waits for the answer."""
    what = str(tool_call.get("title") or tool_call.get("tool_kind") or "a tool call")[:150]

    async def make() -> None:
        label, _, _ = await _label(session_id)
        await _notify(
            "permission_requested", session_id=session_id, agent=agent,
            title=f"{agent} asks permission: {what}",
            body=f"{label} waits for your answer: {what}",
        )  # fmt: skip

    _soon(make)


def turn_ended(session_id: str, agent: str, stop_reason: str) -> None:
    """A chat turn ended while no client showed the session (`AcpSession.shown()`)."""

    async def make() -> None:
        label, _, _ = await _label(session_id)
        ended = "finished its turn" if stop_reason == "end_turn" else f"stopped ({stop_reason})"
        await _notify(
            "turn_ended", session_id=session_id, agent=agent, title=f"{agent} {ended}",
            body=f"{label} waits for your next message.",
        )  # fmt: skip

    _soon(make)


async def session_exited(session_id: str) -> None:
    """The runtime's session-exit hook: a session that failed or exited non-zero (its row is
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
        await _notify(
            "session_failed", session_id=session_id, agent=agent, title=f"{agent} {said}",
            body=f"{label} {said}; its agent log is in svc's logs folder.",
        )  # fmt: skip

    _soon(make)


def subagent_turn_completed(turn_id: str) -> None:
    """A subagent turn finished: every subagent has its report."""

    async def make() -> None:
        from asgiref.sync import sync_to_async

        from sessions_app import subagents

        turn = await sync_to_async(subagents.turn_snapshot)(turn_id)
        members = turn["subagents"]
        counts: dict[str, int] = {}
        for member in members:
            counts[member["status"]] = counts.get(member["status"], 0) + 1
        tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none"
        parent = turn["parent_session_id"]
        label, agent, _ = await _label(parent) if parent else ("", "", None)
        agents = ", ".join(sorted({m["agent"] for m in members}))
        await _notify(
            "subagent_turn_completed", session_id=parent, agent=agent,
            title=f"{len(members)} subagent{'s' * (len(members) != 1)} finished ({tally})",
            body=(f"For {label}: " if label else "") + f"a {turn['mode']} turn of {agents} "
            "has ended; the reports are ready.",
        )  # fmt: skip

    _soon(make)


def pairing_requested(device: str, host: str) -> None:
    """A browser asks to be paired (contract §13). The code is not in the notification: the
    owner reads it on the device asking, which is what makes approving it safe."""
    device = " ".join(device.split())[:120] or "an unknown browser"

    async def make() -> None:
        await _notify(
            "pairing_requested", title="A device asks to pair with svc",
            body=f"{device} via {host or 'a tunnel'}: enter the code it shows on the "
            "dashboard or with `manage.py pair CODE` within a minute.",
        )  # fmt: skip

    _soon(make)
