"""/handover and /pickup in a chat for sessions of other fleet members (contract §18 "Act
anywhere"): the owning member issues and redeems its own codes, asked through its API over the
signed bus (fleet_app.outbound) as the owner on the main port — the chat's people are the
owner's, allowed by the channel's own list."""

from __future__ import annotations

import json
from typing import Any

from django.utils import timezone

from core.errors import DomainError
from fleet_app.bus import FleetUnreachable
from fleet_app.outbound import Forwarded, Forwarder, Reply
from sessions_app.handover import FailureWindow


def _post(path: str, body: dict[str, Any]) -> Forwarded:
    headers = [("content-type", "application/json")]
    return Forwarded("POST", path, "", headers, json.dumps(body).encode(), "main")


def _problem(reply: Reply) -> str:
    answer = reply.json()
    error = answer.get("error") if isinstance(answer, dict) else None
    return str(error.get("message")) if isinstance(error, dict) else f"HTTP {reply.status}"


async def handover_there(
    forwarder: Forwarder | None, machine: str, session_id: str
) -> dict[str, Any]:
    """A code for another member's session, issued there ({code, expires_in, …})."""
    if forwarder is None:
        raise DomainError("svc here is not in a fleet")
    name = forwarder.name_of(machine)
    try:
        reply = await forwarder.send(machine, _post(f"/api/sessions/{session_id}/handover", {}))
    except FleetUnreachable as exc:
        raise DomainError(f"machine {name} cannot be reached: {exc.reason}") from None
    if reply.status != 201:
        raise DomainError(f"machine {name} gave no code: {_problem(reply)}")
    return dict(reply.json())


async def picked_up_elsewhere(
    forwarder: Forwarder | None, failures: FailureWindow, code: str
) -> dict[str, Any] | None:
    """The session a code issued on another member hands over (used up there), or None when no
    other member has it — or while this member's failed pickups lock pickup: a guess then
    costs nothing anywhere. Outside a fleet, None."""
    if forwarder is None:
        return None
    if failures.locked(timezone.now()):
        return None
    found = await forwarder.picked_up_elsewhere(_post("/api/handover/pickup", {"code": code}))
    if found is None:
        return None
    machine, reply = found
    session = reply.json()
    if not isinstance(session, dict) or not session.get("id"):
        return None
    forwarder.lists.learn_session(machine, session)
    return session | {"machine_name": forwarder.name_of(machine)}
