"""Stopping sessions: one (at once, or in the background), all of them, and removing an ended
one's row."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.db import transaction

from core import errors
from sessions_app.models import Session
from sessions_app.services.records import _session_or_404, session_mark_exited

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost

logger = logging.getLogger("sessions_app.services")


async def asession_stop(
    *, host: ProcessHost, session_id: str, wait: bool = True
) -> tuple[Session, bool]:
    """Stop the process tree; the row stays and becomes `exited` once the process has ended.

    Returns (the row, whether the stop is still under way): with `wait` the row is already
    `exited`; without, the hang-up is sent and the live list shows `exited` when it happens.
    Stopping an ended session is a no-op."""
    session = await database_sync_to_async(_session_or_404)(session_id)
    if not session.is_live:
        return session, False
    user = Session.EndedBy.USER
    if not wait and await host.stop_soon(str(session.id), by=user):
        return session, True
    await host.stop(str(session.id), by=user)
    code = host.terminal_exit_code(str(session.id))
    await database_sync_to_async(session_mark_exited)(
        session_id=str(session.id), exit_code=code, ended_by=user
    )
    await database_sync_to_async(session.refresh_from_db)()
    return session, False


def session_stop(*, host: ProcessHost, session_id: str, wait: bool = True) -> tuple[Session, bool]:
    """The sync edge of asession_stop (DRF views)."""
    return async_to_sync(asession_stop)(host=host, session_id=session_id, wait=wait)


@transaction.atomic
def session_remove(*, session_id: str) -> None:
    """Delete an ended session's row, its stored chat events and handover codes (subagents that
    ran in it keep their results). A live session is refused: stop it first."""
    session = Session.objects.select_for_update().filter(pk=session_id).first()
    if session is None:
        raise errors.NotFound(f"no session {session_id}")
    if session.is_live:
        raise errors.Conflict(
            f"session {session_id} is {session.status}: stop it first "
            f"(DELETE /api/sessions/{session_id}), then remove it"
        )
    session.delete()


def _live_session_ids() -> list[str]:
    live = Session.objects.filter(status__in=Session.LIVE)
    return [str(pk) for pk in live.values_list("pk", flat=True)]


async def asessions_stop_all(*, host: ProcessHost) -> int:
    """Stop every live session's process tree, as a person stopping each (`ended_by` user), all
    at once; returns how many this call ended. Each row is `exited` when it returns. One stop
    that fails is logged and does not keep the others running."""
    ids = await database_sync_to_async(_live_session_ids)()

    async def stop(session_id: str) -> bool:
        try:
            session, _ = await asession_stop(host=host, session_id=session_id)
        except errors.NotFound:
            return False  # removed meanwhile
        # A session that ended on its own between the list and its stop was not ended here.
        return session.ended_by == Session.EndedBy.USER

    stopped = await asyncio.gather(*(stop(i) for i in ids), return_exceptions=True)
    for session_id, result in zip(ids, stopped, strict=True):
        if isinstance(result, BaseException):
            logger.error("stopping session %s failed", session_id, exc_info=result)
    return sum(result is True for result in stopped)


def sessions_stop_all(*, host: ProcessHost) -> int:
    """The sync edge of asessions_stop_all (DRF views)."""
    return async_to_sync(asessions_stop_all)(host=host)
