"""Subagent tools (contract §4): the synchronous halves. Starting and waiting happen on the event
loop in mcp_app.server, through subagents_app.subagent_runs."""

from __future__ import annotations

from typing import Any

from core.errors import DomainError
from sessions_app import selectors
from subagents_app import subagents

_INFO_KEYS = ("id", "name", "agent", "session_id", "status", "workspace", "branch")


def initialize(
    *, mode: str, cwd: str, agents: list[dict[str, Any]], task: str | None,
    header_session_id: str | None,
) -> dict[str, Any]:  # fmt: skip
    parent = header_session_id if header_session_id and selectors.session_get(
        header_session_id
    ) else None  # fmt: skip
    turn = subagents.turn_create(
        mode=mode, cwd=cwd, agents=agents, task=task or "", parent_session_id=parent
    )
    snapshot = subagents.turn_dict(turn)
    return {
        "turn_id": snapshot["turn_id"], "mode": snapshot["mode"],
        "subagents": [
            {k: s[k] for k in _INFO_KEYS} for s in snapshot["subagents"]
        ],
    }  # fmt: skip


def check_wait(turn_id: str, timeout_s: float) -> None:
    subagents.turn_get(turn_id)
    if not subagents.WAIT_MIN_S <= timeout_s <= subagents.WAIT_MAX_S:
        raise DomainError(
            f"timeout_s must be between {subagents.WAIT_MIN_S} and {subagents.WAIT_MAX_S} "
            f"seconds, got {timeout_s}; call again to keep waiting"
        )


def reports(snapshot: dict[str, Any]) -> dict[str, Any]:
    """wait_for_subagents' answer: the turn and each subagent's report."""
    keys = ("id", "name", "agent", "status", "summary", "report", "final_message", "changes",
            "session_id", "workspace")  # fmt: skip
    return {
        "turn_id": snapshot["turn_id"], "mode": snapshot["mode"], "status": snapshot["status"],
        "completed": snapshot["completed"], "timed_out": snapshot["timed_out"],
        "reports": [{k: s[k] for k in keys} for s in snapshot["subagents"]],
    }  # fmt: skip


def progress_line(snapshot: dict[str, Any]) -> tuple[int, int, str]:
    """(ended, total, a line a person can read) for an MCP progress notification."""
    members = snapshot["subagents"]
    ended = sum(1 for s in members if s["status"] in subagents.ENDED)
    states = ", ".join(f"{s['name']}: {s['status']}" for s in members)
    return ended, len(members), f"{ended}/{len(members)} subagents ended — {states}"
