"""Sessions after svc was away, and Resume (contract §17): taken back from the holder at start
or ended `interrupted`, and started again under the same id."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.db import transaction
from django.utils import timezone

from core import config
from core.errors import DomainError
from sessions_app import agent_logs, seals, selectors
from sessions_app.host import resume
from sessions_app.models import Session
from sessions_app.services.records import (
    _exit_handler,
    _session_or_404,
    _store_event,
    session_event_append,
    session_mark_exited,
)
from sessions_app.services.start import _launch_for

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost

logger = logging.getLogger("sessions_app.services")


INTERRUPTED = (
    "its process was gone when svc started again (a reboot, or its holder was stopped): "
    "resume it to go on"
)


NOT_SEALED = (
    "svc did not start this session with the agent, workspace and profile its record names now "
    "(the record was written or changed in svc's database), so it does not start it again: "
    "start a new session instead"
)


def _live_sessions() -> list[Session]:
    return list(Session.objects.filter(status__in=Session.LIVE))


async def asessions_take_back(*, host: ProcessHost) -> tuple[int, list[Session]]:
    """At start (contract §17): every session the last svc left live is taken back from the
    holder that kept it — a terminal with its scrollback, a chat where the last svc left off —
    or, when its process is gone, ends `interrupted` (resumable; a chat's history says so).
    Whatever the holder holds that no live session claims is hung up. Returns (how many were
    taken back, the interrupted sessions)."""
    held = await host.held()
    live = await database_sync_to_async(_live_sessions)()
    kept = [s for s in live if str(s.id) in held]
    taken = await asyncio.gather(*(_take_back(host, s, held[str(s.id)]) for s in kept))
    lost = [s for s in live if str(s.id) not in held]
    lost += [s for s, ok in zip(kept, taken, strict=True) if not ok]
    for session in lost:
        await database_sync_to_async(_interrupt)(session)
    claimed = {str(s.id) for s in live}
    for session_id in held.keys() - claimed:  # ended or removed while the holder kept it
        await host.let_down(session_id)
    return sum(taken), lost


@transaction.atomic
def _interrupt(session: Session) -> None:
    session_mark_exited(
        session_id=str(session.id),
        exit_code=None,
        ended_by=Session.EndedBy.INTERRUPTED,
        detail=INTERRUPTED,
    )
    if session.kind != Session.Kind.TERMINAL:
        session_event_append(
            session_id=str(session.id), kind="interrupted", payload={"message": INTERRUPTED}
        )


async def asessions_resume_interrupted(*, host: ProcessHost, sessions: list[Session]) -> int:
    """`host.resume_on_start`: the chats interrupted at this start are resumed, one by one, in
    the background of the start; one that cannot be is logged and stays interrupted."""
    resumed = 0
    for session in sessions:
        if session.kind != Session.Kind.CHAT:
            continue
        try:
            await asession_resume(host=host, session_id=str(session.id))
            resumed += 1
        except Exception as exc:
            logger.warning("could not resume interrupted session %s: %s", session.id, exc)
        finally:
            host.resuming.done(str(session.id))
    return resumed


async def _take_back(host: ProcessHost, session: Session, held: dict[str, Any]) -> bool:
    """`held`: the holder's description of the session (its journal's end)."""
    session_id = str(session.id)
    try:
        if session.kind == Session.Kind.TERMINAL:
            await host.take_back_terminal(session_id, on_exit=_exit_handler(host))
            return True

        position = await database_sync_to_async(selectors.chat_position)(session_id)
        await host.take_back_chat(
            session_id,
            agent=session.agent,
            store=_store_event,
            on_exit=_exit_handler(host),
            agent_session_id=session.agent_session_id,
            position=position,
            away_until=int(held.get("end", -1)),
            permission_timeout_s=config.knobs().permission_timeout_s,
        )
        return True
    except Exception:
        logger.exception("could not take session %s back from its holder", session_id)
        return False


async def asession_resume(*, host: ProcessHost, session_id: str) -> Session:
    """Start a session's process again under the same id (contract §17): a chat loads its
    earlier ACP session when the agent can (else a fresh one), a terminal starts with its old
    scrollback above a marked line. A live session is returned as it is."""
    session = await database_sync_to_async(_session_or_404)(session_id)
    if not seals.launch_sealed(session):
        raise DomainError(NOT_SEALED, status=409, code="not_sealed")
    if session.kind == Session.Kind.TERMINAL:
        return await _resume_terminal(host, session)
    if session.is_live and host.chat(str(session.id)) is not None:
        return session
    launch = _launch_for(
        agent=session.agent,
        workspace=session.workspace,
        kind=session.kind,
        profile_id=session.profile_id,
        session_id=str(session.id),
    )

    position = await database_sync_to_async(selectors.chat_position)(str(session.id))
    try:
        pid, agent_session_id = await host.start_chat(
            str(session.id),
            agent=session.agent,
            argv=launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            store=_store_event,
            on_exit=_exit_handler(host),
            resume_id=session.agent_session_id,
            stderr_path=agent_logs.path(session.id),
            offset=position.stored_upto + 1,  # after the earlier process's: never repeated
            permission_timeout_s=config.knobs().permission_timeout_s,
            start_timeout_s=config.knobs().agent_start_timeout_s,
        )
    except Exception as exc:
        status = 504 if isinstance(exc, TimeoutError) else 502
        raise DomainError(f"could not resume {session.agent!r}: {exc}", status=status) from exc
    await _say_how_it_continued(host, str(session.id))
    resumed = await database_sync_to_async(_mark_resumed)(str(session.id), pid, agent_session_id)
    if (chat := host.chat(str(session.id))) is not None and chat.on_idle is not None:
        # What was queued for it goes now: after the history says how it went on, and with the
        # summary a new agent session is primed with. The chat's own idle hook (the host's
        # on_idle, prompt_queue.on_idle in the daemon) sends it, as after any turn.
        await chat.on_idle(chat)
    return resumed


async def _resume_terminal(host: ProcessHost, session: Session) -> Session:
    """A built-in agent's terminal with that agent's own resume flag (agents.RESUME_ARGS), any
    other in the same folder; either way the output of before stays above a marked line."""
    session_id = str(session.id)
    if session.is_live and host.hosts(session_id):
        return session
    launch = _launch_for(
        agent=session.agent,
        workspace=session.workspace,
        kind=session.kind,
        profile_id=session.profile_id,
        session_id=session_id,
        resume=True,
    )
    when = timezone.localtime().strftime("%Y-%m-%d %H:%M")
    marker = f"\r\n\x1b[7m svc: resumed {when}; the output above is from before \x1b[0m\r\n"
    try:
        pid = await host.start_terminal(
            session_id,
            argv=launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            cols=80,
            rows=24,
            on_exit=_exit_handler(host),
            preface=await host.output_of_before(session_id) + marker.encode(),
        )
    except Exception as exc:
        raise DomainError(f"could not resume {session.agent!r}: {exc}", status=502) from exc
    return await database_sync_to_async(_mark_resumed)(session_id, pid, "")


async def _say_how_it_continued(host: ProcessHost, session_id: str) -> None:
    """The history records how the resumed chat went on (a `resumed` event); a new agent session
    gets a summary of the history with its next prompt (contract §17, host/resume.py)."""

    chat = host.chat(session_id)
    if chat is None or chat.continued is None:
        return
    events = await database_sync_to_async(selectors.session_events)(session_id)
    if chat.continued.way == "summary" or resume.unprimed(events):
        chat.continued.primer = resume.summary(events)
    await chat.emit("resumed", chat.continued.event())


@transaction.atomic
def _mark_resumed(session_id: str, pid: int, agent_session_id: str) -> Session:
    session = Session.objects.select_for_update().get(pk=session_id)
    session.mark_resumed(pid, agent_session_id)
    session.save()
    return session


def session_resume(*, host: ProcessHost, session_id: str) -> Session:
    """The sync edge of asession_resume (DRF views)."""
    return async_to_sync(asession_resume)(host=host, session_id=session_id)
