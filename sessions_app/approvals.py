"""Every permission decision is recorded (contract §17): the `Approval` rows and who decided.

A row is made from the `permission_resolved` event, in the transaction that stores that event
(`services.session_event_append`, which calls `services/approvals.py`'s `approval_create`), not
by each surface that answers: whatever answers — a
`/ws/chat` client, a chat channel's button, the API, the policy, a timeout or a cancelled turn —
goes through `AcpSession`, which puts `decided_by` in the event. So the record cannot miss a
decision, cannot hold one the history lacks, and a decision replayed from a journal after a
restart (contract §17, "Permissions survive") is recorded like any other.

`decided_by` is `{"surface": dashboard|telegram|slack|api|policy|cancelled, "who": str}`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypedDict

from asgiref.sync import async_to_sync
from django.utils import dateparse, timezone

from core import errors
from core.errors import DomainError

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost


class DecidedBy(TypedDict):
    surface: str
    who: str


SURFACES = ("dashboard", "telegram", "slack", "api", "policy", "cancelled")
OWNER = "owner"  # the main port's caller: the owner token or the owner's browser session


def decided_by(surface: str, who: str) -> DecidedBy:
    if surface not in SURFACES:
        raise ValueError(f"surface must be one of {', '.join(SURFACES)}, got {surface!r}")
    return {"surface": surface, "who": " ".join(str(who).split())[:300]}


def caller(scope: dict[str, Any]) -> str:
    """Who is calling, for the record: the owner on the main port, or the paired device (its
    id and, in a few fixed words, its browser) on the remote listener (remote_app.gate puts
    both in the scope); and the member it came through, when another one of the fleet."""
    device = scope.get("svc_device")
    if not scope.get("svc_remote") or not device:
        who = OWNER
    else:
        name = scope.get("svc_device_name")
        who = f"paired device {device}" + (f" ({name})" if name else "")
    fleet = scope.get("svc_fleet")  # asked on another member of the fleet (contract §18)
    if fleet:
        who += f" via {fleet.get('machine_name') or str(fleet.get('machine', ''))[:8]}"
    return who


# --- dates ------------------------------------------------------------------------------------


def when_parse(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = dateparse.parse_datetime(value)
    except ValueError:
        return None
    if parsed is None:
        return None
    return parsed.replace(tzinfo=UTC) if timezone.is_naive(parsed) else parsed


# --- reads' input -----------------------------------------------------------------------------


def since_parse(raw: str | None) -> datetime | None:
    """`?since=`: an ISO datetime (`2026-11-24T10:00:00Z`, an offset, or naive: UTC) or an ISO
    date (its start, UTC); None when not given."""
    if raw is None or raw == "":
        return None
    when = when_parse(raw)
    if when is None:
        try:
            day = dateparse.parse_date(raw)
        except ValueError:
            day = None
        if day is not None:
            when = datetime(day.year, day.month, day.day, tzinfo=UTC)
    if when is None:
        raise DomainError(
            f"since must be an ISO date or datetime, like 2026-11-24 or 2026-11-24T10:00:00Z; "
            f"got {raw!r}"
        )
    return when


# --- answering through the API ----------------------------------------------------------------


async def _apending(host: ProcessHost, session_id: str) -> list[dict[str, Any]]:
    chat = host.chat(session_id)
    return [] if chat is None else chat.pending_requests()


def permissions_pending(*, host: ProcessHost, session_id: str) -> list[dict[str, Any]]:
    """The permission requests of a live chat still waiting for an answer (the events as
    `/ws/chat` sends them); none for any other session. Read on the daemon's loop, which owns
    the chat."""
    return async_to_sync(_apending)(host, session_id)


async def _aanswer(
    host: ProcessHost, session_id: str, request_id: str, option_id: str, by: DecidedBy
) -> None:
    chat = host.chat(session_id)
    if chat is None:
        raise errors.Conflict(
            f"session {session_id} has no live chat, so nothing of it waits for an answer"
        )
    problem = chat.answer_permission(request_id, option_id, dict(by))
    if problem is None:
        return
    if problem.startswith("option_id"):  # the request is waiting; the option is not one of its
        raise DomainError(problem)
    raise errors.NotFound(
        f"{problem} in session {session_id}: it was answered, timed out, or never asked "
        f"(GET /api/sessions/{session_id}/permissions lists the waiting ones)"
    )


def permission_answer(
    *, host: ProcessHost, session_id: str, request_id: str, option_id: str, by: DecidedBy
) -> None:
    """Answers a waiting permission request as `by` (the API surface). The answer is set on the
    daemon's loop, which owns the request's future (a DRF view runs in a worker thread)."""
    async_to_sync(_aanswer)(host, session_id, request_id, option_id, by)
