"""The ACP answers to an agent's permission request (`session/request_permission`), and what
svc stores of one. Imported with host/acp.py, once a chat starts (acp.py says why)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
)


def options_of(options: list[PermissionOption]) -> list[dict[str, Any]]:
    """The options as stored in the events and shown on every surface."""
    return [{"option_id": o.option_id, "name": o.name, "kind": str(o.kind)} for o in options]


def choose(options: list[PermissionOption], prefix: str) -> RequestPermissionResponse | None:
    """The first option whose kind starts with `prefix` (allow…, reject…), selected."""
    for option in options:
        if str(option.kind).startswith(prefix):
            return selected(option.option_id)
    return None


def selected(option_id: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(
        outcome=AllowedOutcome(option_id=option_id, outcome="selected")
    )


def refuse(options: list[PermissionOption]) -> RequestPermissionResponse:
    """A reject option when the agent offered one, else the "cancelled" outcome."""
    return choose(options, "reject") or RequestPermissionResponse(
        outcome=DeniedOutcome(outcome="cancelled")
    )


def option_of(answer: RequestPermissionResponse) -> str | None:
    """The option an answer selects; None for the "cancelled" outcome, which selects none."""
    return getattr(answer.outcome, "option_id", None)


def now() -> str:
    """When a decision was made, as the event records it (ISO, UTC)."""
    return datetime.now(UTC).isoformat()
