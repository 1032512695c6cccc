"""The rows a session's life writes whatever started it: its chat events, its end (and the
handler the process host calls when its process ends), and the lookup the others share."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from channels.db import database_sync_to_async
from django.db import transaction
from django.db.models import Max

from core import errors
from sessions_app import agent_failure, agent_logs, selectors, signals
from sessions_app.models import Session, SessionEvent
from sessions_app.services.approvals import approval_create
from sessions_app.services.naming import session_name_from_event

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost

logger = logging.getLogger("sessions_app.services")


HOLDER_LOST = "its holder went away, and its process with it: resume it to go on"


async def _store_event(session_id: str, kind: str, payload: dict, src: int | None) -> int:
    return await database_sync_to_async(session_event_append)(
        session_id=session_id, kind=kind, payload=payload, src=src
    )


def _exit_handler(host: ProcessHost) -> Callable[[str, int | None], Awaitable[None]]:
    """What the host calls when a session's process ends."""

    async def exited(session_id: str, exit_code: int | None) -> None:
        await _on_process_exit(host, session_id, exit_code)

    return exited


async def _on_process_exit(host: ProcessHost, session_id: str, exit_code: int | None) -> None:
    ended_by = host.stopped_by(session_id)
    if ended_by == Session.EndedBy.INTERRUPTED:
        detail = HOLDER_LOST
    elif not ended_by and agent_logs.path(session_id).exists():  # a chat's agent ended: why
        detail = await asyncio.to_thread(agent_failure.ending, session_id, exit_code)
    else:
        detail = ""
    await database_sync_to_async(session_mark_exited)(
        session_id=session_id, exit_code=exit_code, ended_by=ended_by, detail=detail
    )
    # e.g. a stopped agent's subagents stop too, a failure is notified (contract §15)
    answers = await signals.session_exited.asend_robust(
        sender=_on_process_exit, session_id=session_id
    )
    for _, error in answers:
        if isinstance(error, Exception):
            logger.error("a session-exit receiver failed for %s", session_id, exc_info=error)


@transaction.atomic
def session_mark_exited(
    *,
    session_id: str,
    exit_code: int | None,
    failed: bool = False,
    ended_by: str = "",
    detail: str = "",
) -> None:
    session = Session.objects.select_for_update().filter(pk=session_id).first()
    if session is not None and session.mark_exited(
        exit_code, failed=failed, ended_by=ended_by, detail=detail
    ):
        session.save()


def _session_or_404(session_id: str) -> Session:
    session = selectors.session_get(session_id)
    if session is None:
        raise errors.NotFound(f"no session {session_id}")
    return session


@transaction.atomic
def session_event_append(
    *, session_id: str, kind: str, payload: dict, src: int | None = None
) -> int:
    """Store one chat event for replay; seq numbers are dense per session. `src`: the offset of
    the agent message it came from (host/acp_link.py)."""
    last = SessionEvent.objects.filter(session_id=session_id).aggregate(m=Max("seq"))["m"]
    seq = (last or 0) + 1
    event = SessionEvent.objects.create(
        session_id=session_id, seq=seq, kind=kind, payload=payload, src=src
    )
    session_name_from_event(session_id=session_id, kind=kind, payload=payload)
    approval_create(event=event)  # a decision is recorded with its event, or neither is
    return seq
