"""Starting sessions: the checked row, the agent's launch, and the process started in the host.
The process host lives on the daemon's event loop: the async services run there and reach the
database once per write; the sync ones are the edges for DRF views, crossing to the loop once."""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.db import transaction

from core import config
from core.errors import DomainError
from sessions_app import agent_failure, agent_logs, seals
from sessions_app import agents as agent_registry
from sessions_app.models import Session
from sessions_app.services.records import _exit_handler, _store_event, session_mark_exited
from sessions_app.services.workspaces import _normalise_workspace

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost

logger = logging.getLogger("sessions_app.services")


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
    return _sealed_create(
        Session(
            agent=agent,
            workspace=path,
            kind=kind,
            profile_id=profile_id,
            title=title,
            title_by="user" if title else "",
        )
    )


def _sealed_create(session: Session) -> Session:
    """The row, sealed with what it is started with: only such a row is ever started again."""
    session.seal = seals.launch_seal(session)
    session.save(force_insert=True)
    return session


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
    return _sealed_create(
        Session(
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
