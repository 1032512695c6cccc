"""Stop all across a fleet (contract §17 "every session", §18): `POST /api/sessions/stop_all`
with no machine named is done by every member, each stopping its own sessions, asked over the
signed bus as any act-anywhere request (the person's surface travels with it, so each member
applies its own refusals). A member that cannot be asked — away, Redis gone, or refusing — is
named in the answer with why: its sessions keep running there, and the person is told so.

The answer: `{"stopped": n, "machines": [{"machine", "machine_name", "stopped": n | null,
"error"?}]}`, this machine first, then the others by name; `stopped` is the fleet's total of
what was stopped. Plain functions over decoded answers, tested with dicts in and dicts out."""

from __future__ import annotations

from typing import Any

from fleet_app.bus import FleetUnreachable
from fleet_app.outbound import Reply

Row = dict[str, Any]


def done(machine: str, name: str, answer: Any) -> Row:
    """A member that stopped its own: `answer` is its `{"stopped": n}`."""
    count = answer.get("stopped") if isinstance(answer, dict) else None
    return {"machine": machine, "machine_name": name, "stopped": int(count or 0)}


def not_done(machine: str, name: str, why: str) -> Row:
    return {"machine": machine, "machine_name": name, "stopped": None, "error": why}


def reply_row(machine: str, name: str, reply: Reply | FleetUnreachable) -> Row:
    """Another member's part, from its reply (or why there was none)."""
    if isinstance(reply, FleetUnreachable):
        why = f"machine {name} is unreachable ({reply.reason}): its sessions keep running there"
        return not_done(machine, name, why)
    if reply.status == 200:
        return done(machine, name, reply.json())
    said = reply.json()
    message = said.get("error", {}).get("message") if isinstance(said, dict) else None
    return not_done(machine, name, f"machine {name} answered {reply.status}: {message or ''}")


def answer(own: Row, others: list[Row]) -> dict[str, Any]:
    rows = [own, *sorted(others, key=lambda row: row["machine_name"])]
    total = sum(row["stopped"] or 0 for row in rows)
    return {"stopped": total, "machines": rows}


def missing(rows: list[Row]) -> list[str]:
    """The names of the members whose sessions were not stopped."""
    return sorted(row["machine_name"] for row in rows if row["stopped"] is None)
