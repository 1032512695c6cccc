"""Writes for sessions, workspaces, agents, channels and settings. Database writes are one
transaction each; starting and stopping processes happens around them, never inside one."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.db import transaction
from django.utils import timezone

from core import config, errors
from core import settings_store as settings_services
from core.errors import DomainError
from sessions_app import agent_failure, agent_logs, approvals, naming, prompt_queue, signals
from sessions_app import agents as agent_registry
from sessions_app.models import Session, Workspace

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost

logger = logging.getLogger(__name__)


INTERRUPTED = (
    "its process was gone when svc started again (a reboot, or its holder was stopped): "
    "resume it to go on"
)
HOLDER_LOST = "its holder went away, and its process with it: resume it to go on"


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
    taken = await asyncio.gather(*(_take_back(host, s) for s in kept))
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
    return resumed


async def _take_back(host: ProcessHost, session: Session) -> bool:
    session_id = str(session.id)
    try:
        if session.kind == Session.Kind.TERMINAL:
            await host.take_back_terminal(session_id, on_exit=_exit_handler(host))
            return True
        from sessions_app import selectors

        position = await database_sync_to_async(selectors.chat_position)(session_id)
        await host.take_back_chat(
            session_id,
            agent=session.agent,
            store=_store_event,
            on_exit=_exit_handler(host),
            agent_session_id=session.agent_session_id,
            position=position,
            permission_timeout_s=config.knobs().permission_timeout_s,
        )
        return True
    except Exception:
        logger.exception("could not take session %s back from its holder", session_id)
        return False


def _normalise_workspace(path: str) -> Path:
    if not path or not os.path.isabs(path):
        raise DomainError(f"workspace path must be absolute, got {path!r}")
    resolved = Path(path).resolve()
    if not resolved.is_dir():
        raise DomainError(f"workspace {path!r} is not an existing directory")
    return resolved


def workspace_register(*, path: str, name: str = "") -> tuple[Workspace, bool]:
    """Idempotent: the same directory always maps to one row; also recorded in settings.json."""
    resolved = _normalise_workspace(path)
    with settings_services.SETTINGS_LOCK, transaction.atomic():
        workspace, created = Workspace.objects.get_or_create(
            path=str(resolved), defaults={"name": name or resolved.name}
        )
        if not created and name and workspace.name != name:
            workspace.name = name
            workspace.save(update_fields=["name"])
        declared = list(config.current_settings().workspaces)
        if str(resolved) not in declared:
            config.update_settings({"workspaces": [*declared, str(resolved)]})
    return workspace, created


def workspace_rename(*, workspace_id: int, name: str) -> Workspace:
    """A workspace's name is svc's own (the database's): settings.json lists only paths. A blank
    name goes back to the folder's name."""
    with transaction.atomic():
        workspace = Workspace.objects.select_for_update().filter(pk=workspace_id).first()
        if workspace is None:
            raise errors.NotFound(f"no workspace with id {workspace_id}")
        workspace.name = name.strip() or Path(workspace.path).name
        workspace.save(update_fields=["name"])
    return workspace


def workspace_delete(*, workspace_id: int) -> None:
    # The row and settings.json change as one against the settings mirror: a mirror that read
    # settings.json before the removal would otherwise re-create the row it just deleted.
    with settings_services.SETTINGS_LOCK, transaction.atomic():
        workspace = Workspace.objects.filter(pk=workspace_id).first()
        if workspace is None:
            raise errors.NotFound(f"no workspace with id {workspace_id}")
        workspace.delete()
        declared = list(config.current_settings().workspaces)
        if workspace.path in declared:
            config.update_settings({"workspaces": [p for p in declared if p != workspace.path]})


# --- hosted sessions -----------------------------------------------------------------------------
# The process host lives on the daemon's event loop. The async services (`asession_create`,
# `asession_resume`, `asession_stop`) run there and reach the database once per write; the sync
# ones are the edges for DRF views and other sync callers, crossing to the loop once.

TERMINAL_SIZE_MAX = 1000


def _launch_for(
    *,
    agent: str,
    workspace: str,
    kind: str,
    profile_id: str,
    session_id: str,
    resume: bool = False,
) -> agent_registry.Launch:
    definition = agent_registry.get_agent(agent)
    if definition is None:
        known = ", ".join(agent_registry.all_agents())
        raise DomainError(f"unknown agent {agent!r}; known agents: {known}")
    if not definition.enabled:
        raise DomainError(f"agent {agent!r} is not enabled (its executable was not found)")
    try:
        launch = agent_registry.resolve_launch(
            definition,
            kind=kind,
            session_id=session_id,
            workspace=workspace,
            profile_id=profile_id,
            resume=resume,
        )
    except ValueError as exc:
        raise DomainError(str(exc)) from exc
    if shutil.which(launch.argv[0], path=launch.env.get("PATH")) is None:
        raise DomainError(f"agent {agent!r}: {launch.argv[0]!r} was not found on PATH")
    return launch


def _check_session_args(kind: str, profile_id: str, cols: int, rows: int) -> None:
    if kind not in Session.Kind.values:
        raise DomainError(f"kind must be one of {', '.join(Session.Kind.values)}, got {kind!r}")
    if profile_id and profile_id not in config.current_settings().profiles:
        raise DomainError(f"unknown profile {profile_id!r}; declare it in settings.json profiles")
    for name, value in (("cols", cols), ("rows", rows)):
        if not 1 <= value <= TERMINAL_SIZE_MAX:
            raise DomainError(f"{name} must be between 1 and {TERMINAL_SIZE_MAX}, got {value}")


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


def session_row_create(
    *,
    agent: str,
    workspace: str,
    kind: str = "terminal",
    profile_id: str = "",
    title: str = "",
    cols: int = 80,
    rows: int = 24,
) -> Session:
    """A checked, `starting` session whose process is not started yet (asession_start starts
    it): subagents get their ids before their agents run."""
    _check_session_args(kind, profile_id, cols, rows)
    path = str(_normalise_workspace(workspace))
    _launch_for(agent=agent, workspace=path, kind=kind, profile_id=profile_id, session_id="")
    return Session.objects.create(
        agent=agent,
        workspace=path,
        kind=kind,
        profile_id=profile_id,
        title=title,
        title_by="user" if title else "",
    )


async def asession_create(
    *,
    host: ProcessHost,
    agent: str,
    workspace: str,
    kind: str = "terminal",
    profile_id: str = "",
    cols: int = 80,
    rows: int = 24,
    title: str = "",
    extra_env: dict[str, str] | None = None,
) -> Session:
    """Create the row, start the process in the host, and return the running session.
    `extra_env`: variables for this one process (a subagent's SVC_SUBAGENT_* ones)."""
    if kind == Session.Kind.TERMINAL:
        return await _terminal_create(
            host=host,
            agent=agent,
            workspace=workspace,
            profile_id=profile_id,
            cols=cols,
            rows=rows,
            title=title,
            extra_env=extra_env,
        )
    session = await database_sync_to_async(session_row_create)(
        agent=agent,
        workspace=workspace,
        kind=kind,
        profile_id=profile_id,
        title=title,
        cols=cols,
        rows=rows,
    )
    return await asession_start(session, host=host, cols=cols, rows=rows, extra_env=extra_env)


async def _terminal_create(
    *,
    host: ProcessHost,
    agent: str,
    workspace: str,
    profile_id: str,
    cols: int,
    rows: int,
    title: str,
    extra_env: dict[str, str] | None,
) -> Session:
    """A terminal starts in milliseconds, so its process is started first and its row written
    once, already running: one database write and one list change instead of two (a chat's row
    comes first: its agent may speak before its start is over)."""
    _check_session_args(Session.Kind.TERMINAL, profile_id, cols, rows)
    path = str(_normalise_workspace(workspace))
    session_id = str(uuid.uuid4())
    launch = _launch_for(
        agent=agent, workspace=path, kind="terminal", profile_id=profile_id, session_id=session_id
    )
    launch.env.update(extra_env or {})
    try:
        pid = await host.start_terminal(
            session_id,
            argv=launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            cols=cols,
            rows=rows,
            on_exit=_exit_handler(host),
        )
    except Exception as exc:
        raise DomainError(f"could not start {agent!r}: {exc}", status=502) from exc
    try:
        session = await database_sync_to_async(_running_row_create)(
            session_id=session_id,
            agent=agent,
            workspace=path,
            profile_id=profile_id,
            title=title,
            pid=pid,
        )
    except BaseException:  # the caller left, or the write failed: nobody would own it
        await asyncio.shield(host.stop(session_id))
        raise
    if (code := host.terminal_exit_code(session_id)) is not None:  # ended before its row
        await database_sync_to_async(session_mark_exited)(session_id=session_id, exit_code=code)
        await database_sync_to_async(session.refresh_from_db)()
    return session


def _running_row_create(
    *, session_id: str, agent: str, workspace: str, profile_id: str, title: str, pid: int
) -> Session:
    return Session.objects.create(
        id=session_id,
        agent=agent,
        workspace=workspace,
        kind=Session.Kind.TERMINAL,
        profile_id=profile_id,
        title=title,
        title_by="user" if title else "",
        status=Session.Status.RUNNING,
        pid=pid,
    )


async def asession_start(
    session: Session,
    *,
    host: ProcessHost,
    cols: int = 80,
    rows: int = 24,
    extra_env: dict[str, str] | None = None,
) -> Session:
    """Start a `starting` row's process; a start that fails marks the row failed."""
    try:
        launch = _launch_for(
            agent=session.agent,
            workspace=session.workspace,
            kind=session.kind,
            profile_id=session.profile_id,
            session_id=str(session.id),
        )
        launch.env.update(extra_env or {})
        pid, agent_session_id = await _start_process(host, session, launch, cols, rows)
        return await database_sync_to_async(_mark_running)(str(session.id), pid, agent_session_id)
    except asyncio.CancelledError:
        # The caller left (a client that disconnected): nobody would own this process.
        await asyncio.shield(_abandon(host, str(session.id)))
        raise
    except Exception as exc:
        why = await database_sync_to_async(agent_failure.start_failed)(str(session.id))
        if isinstance(exc, DomainError):
            raise
        # The agent's start failing is a gateway failure (502); never answering ACP's
        # `initialize` within the start limit, a gateway timeout (504).
        status = 504 if isinstance(exc, TimeoutError) else 502
        said = f"{exc or type(exc).__name__}" + (f" — {' '.join(why.split())}" if why else "")
        raise DomainError(f"could not start {session.agent!r}: {said}", status=status) from exc


async def _abandon(host: ProcessHost, session_id: str) -> None:
    await host.stop(session_id)
    await database_sync_to_async(session_mark_exited)(
        session_id=session_id, exit_code=None, failed=True
    )


def session_create(**kwargs: Any) -> Session:
    """The sync edge of asession_create (DRF views)."""
    return async_to_sync(asession_create)(**kwargs)


async def _start_process(
    host: ProcessHost, session: Session, launch: agent_registry.Launch, cols: int, rows: int
) -> tuple[int, str]:
    if session.kind == Session.Kind.TERMINAL:
        pid = await host.start_terminal(
            str(session.id),
            argv=launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            cols=cols,
            rows=rows,
            on_exit=_exit_handler(host),
        )
        return pid, ""
    return await host.start_chat(
        str(session.id),
        agent=session.agent,
        argv=launch.argv,
        env=launch.env,
        cwd=launch.cwd,
        store=_store_event,
        on_exit=_exit_handler(host),
        stderr_path=agent_logs.path(session.id),
        permission_timeout_s=config.knobs().permission_timeout_s,
        start_timeout_s=config.knobs().agent_start_timeout_s,
    )


@transaction.atomic
def _mark_running(session_id: str, pid: int, agent_session_id: str) -> Session:
    session = Session.objects.select_for_update().get(pk=session_id)
    if session.status == Session.Status.STARTING:  # a very short process may have ended already
        session.mark_running(pid)
        session.agent_session_id = agent_session_id
        session.save()
    return session


async def asession_resume(*, host: ProcessHost, session_id: str) -> Session:
    """Start a session's process again under the same id (contract §17): a chat loads its
    earlier ACP session when the agent can (else a fresh one), a terminal starts with its old
    scrollback above a marked line. A live session is returned as it is."""
    session = await database_sync_to_async(_session_or_404)(session_id)
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
    from sessions_app import selectors

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
    if (chat := host.chat(str(session.id))) is not None:
        # What was queued for it goes now: after the history says how it went on, and with the
        # summary a new agent session is primed with.
        await prompt_queue.drain(chat)
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
    from sessions_app import selectors
    from sessions_app.host import resume

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


def _session_or_404(session_id: str) -> Session:
    from sessions_app import selectors

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
    from django.db.models import Max

    from sessions_app.models import SessionEvent

    last = SessionEvent.objects.filter(session_id=session_id).aggregate(m=Max("seq"))["m"]
    seq = (last or 0) + 1
    event = SessionEvent.objects.create(
        session_id=session_id, seq=seq, kind=kind, payload=payload, src=src
    )
    naming.name_from_event(session_id, kind, payload)
    approvals.approval_record(event)  # a decision is recorded with its event, or neither is
    return seq


# --- stop everything (contract §17 `host.on_exit`) ------------------------------------------------


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


# --- resume (contract §17 "Resume") --------------------------------------------------------------


def session_resume(*, host: ProcessHost, session_id: str) -> Session:
    """The sync edge of asession_resume (DRF views)."""
    return async_to_sync(asession_resume)(host=host, session_id=session_id)
