"""Writes for sessions, workspaces, agents, channels and settings. Database writes are one
transaction each; starting and stopping processes happens around them, never inside one."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.db import transaction

from sessions_app import agent_logs
from sessions_app import agents as agent_registry
from sessions_app.models import Session, Workspace
from svcproject import config, errors
from svcproject import services as settings_services
from svcproject.errors import DomainError
from svcproject.runtime import current

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@transaction.atomic
def sessions_reconcile() -> int:
    """At start: live sessions whose process is gone become `exited`, ended by svc stopping
    (whatever way it stopped, its end took their terminals and pipes with it)."""
    ended = 0
    for session in Session.objects.select_for_update().filter(status__in=Session.LIVE):
        if not _pid_alive(session.pid) and session.mark_exited(
            session.exit_code, ended_by=Session.EndedBy.SVC
        ):
            session.save(
                update_fields=["status", "exit_code", "ended_by", "ended_at", "updated_at"]
            )
            ended += 1
    return ended


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


def _host() -> ProcessHost:
    return current().host


def _launch_for(
    *, agent: str, workspace: str, kind: str, profile_id: str, session_id: str
) -> agent_registry.Launch:
    definition = agent_registry.get_agent(agent)
    if definition is None:
        known = ", ".join(agent_registry.all_agents())
        raise DomainError(f"unknown agent {agent!r}; known agents: {known}")
    if not definition.enabled:
        raise DomainError(f"agent {agent!r} is not enabled (its executable was not found)")
    try:
        launch = agent_registry.resolve_launch(
            definition, kind=kind, session_id=session_id, workspace=workspace, profile_id=profile_id
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


async def _store_event(session_id: str, kind: str, payload: dict) -> int:
    return await database_sync_to_async(session_event_append)(
        session_id=session_id, kind=kind, payload=payload
    )


async def _on_process_exit(session_id: str, exit_code: int) -> None:
    await database_sync_to_async(session_mark_exited)(
        session_id=session_id, exit_code=exit_code, ended_by=_host().stopped_by(session_id)
    )
    await current().session_exited(session_id)  # e.g. a stopped agent's subagents stop too


def session_row_create(
    *, agent: str, workspace: str, kind: str = "terminal", profile_id: str = "", title: str = "",
    cols: int = 80, rows: int = 24,
) -> Session:  # fmt: skip
    """A checked, `starting` session whose process is not started yet (asession_start starts
    it): subagents get their ids before their agents run."""
    _check_session_args(kind, profile_id, cols, rows)
    path = str(_normalise_workspace(workspace))
    _launch_for(agent=agent, workspace=path, kind=kind, profile_id=profile_id, session_id="")
    return Session.objects.create(
        agent=agent, workspace=path, kind=kind, profile_id=profile_id, title=title
    )


async def asession_create(
    *, agent: str, workspace: str, kind: str = "terminal", profile_id: str = "", cols: int = 80,
    rows: int = 24, title: str = "", extra_env: dict[str, str] | None = None,
) -> Session:  # fmt: skip
    """Create the row, start the process in the host, and return the running session.
    `extra_env`: variables for this one process (a subagent's SVC_SUBAGENT_* ones)."""
    session = await database_sync_to_async(session_row_create)(
        agent=agent, workspace=workspace, kind=kind, profile_id=profile_id, title=title,
        cols=cols, rows=rows,
    )  # fmt: skip
    return await asession_start(session, cols=cols, rows=rows, extra_env=extra_env)


async def asession_start(
    session: Session, *, cols: int = 80, rows: int = 24, extra_env: dict[str, str] | None = None
) -> Session:
    """Start a `starting` row's process; a start that fails marks the row failed."""
    try:
        launch = _launch_for(
            agent=session.agent, workspace=session.workspace, kind=session.kind,
            profile_id=session.profile_id, session_id=str(session.id),
        )  # fmt: skip
        launch.env.update(extra_env or {})
        pid, agent_session_id = await _start_process(session, launch, cols, rows)
        return await database_sync_to_async(_mark_running)(str(session.id), pid, agent_session_id)
    except asyncio.CancelledError:
        # The caller left (a client that disconnected): nobody would own this process.
        await asyncio.shield(_abandon(str(session.id)))
        raise
    except Exception as exc:
        await database_sync_to_async(session_mark_exited)(
            session_id=str(session.id), exit_code=None, failed=True
        )
        if isinstance(exc, DomainError):
            raise
        # The agent's start failing is a gateway failure (502); never answering ACP's
        # `initialize` within the start limit, a gateway timeout (504).
        status = 504 if isinstance(exc, TimeoutError) else 502
        raise DomainError(
            f"could not start {session.agent!r}: {exc or type(exc).__name__}", status=status
        ) from exc


async def _abandon(session_id: str) -> None:
    await _host().stop(session_id)
    await database_sync_to_async(session_mark_exited)(
        session_id=session_id, exit_code=None, failed=True
    )


def session_create(**kwargs: Any) -> Session:
    """The sync edge of asession_create (DRF views)."""
    return async_to_sync(asession_create)(**kwargs)


async def _start_process(
    session: Session, launch: agent_registry.Launch, cols: int, rows: int
) -> tuple[int, str]:
    if session.kind == Session.Kind.TERMINAL:
        pid = await _host().start_terminal(
            str(session.id), argv=launch.argv, env=launch.env, cwd=launch.cwd,
            cols=cols, rows=rows, on_exit=_on_process_exit,
        )  # fmt: skip
        return pid, ""
    return await _host().start_chat(
        str(session.id), agent=session.agent, argv=launch.argv, env=launch.env, cwd=launch.cwd,
        store=_store_event, on_exit=_on_process_exit, stderr_path=agent_logs.path(session.id),
        permission_timeout_s=config.knobs().permission_timeout_s,
        start_timeout_s=config.knobs().agent_start_timeout_s,
    )  # fmt: skip


@transaction.atomic
def _mark_running(session_id: str, pid: int, agent_session_id: str) -> Session:
    session = Session.objects.select_for_update().get(pk=session_id)
    if session.status == Session.Status.STARTING:  # a very short process may have ended already
        session.mark_running(pid)
        session.agent_session_id = agent_session_id
        session.save()
    return session


async def asession_resume(*, session_id: str) -> Session:
    """Start a chat session's agent again, loading its earlier ACP session when the agent can
    (else a fresh one); the row is live again. A live session is returned as it is."""
    session = await database_sync_to_async(_session_or_404)(session_id)
    if session.kind == Session.Kind.TERMINAL:
        raise DomainError("terminal sessions cannot be resumed; start a new one")
    if session.is_live and _host().chat(str(session.id)) is not None:
        return session
    launch = _launch_for(
        agent=session.agent, workspace=session.workspace, kind=session.kind,
        profile_id=session.profile_id, session_id=str(session.id),
    )  # fmt: skip
    try:
        pid, agent_session_id = await _host().start_chat(
            str(session.id), agent=session.agent, argv=launch.argv, env=launch.env,
            cwd=launch.cwd, store=_store_event, on_exit=_on_process_exit,
            resume_id=session.agent_session_id, stderr_path=agent_logs.path(session.id),
            permission_timeout_s=config.knobs().permission_timeout_s,
            start_timeout_s=config.knobs().agent_start_timeout_s,
        )  # fmt: skip
    except Exception as exc:
        status = 504 if isinstance(exc, TimeoutError) else 502
        raise DomainError(f"could not resume {session.agent!r}: {exc}", status=status) from exc
    return await database_sync_to_async(_mark_resumed)(str(session.id), pid, agent_session_id)


@transaction.atomic
def _mark_resumed(session_id: str, pid: int, agent_session_id: str) -> Session:
    session = Session.objects.select_for_update().get(pk=session_id)
    session.mark_resumed(pid, agent_session_id)
    session.save()
    return session


@transaction.atomic
def session_mark_exited(
    *, session_id: str, exit_code: int | None, failed: bool = False, ended_by: str = ""
) -> None:
    session = Session.objects.select_for_update().filter(pk=session_id).first()
    if session is not None and session.mark_exited(exit_code, failed=failed, ended_by=ended_by):
        session.save()


async def asession_stop(*, session_id: str, wait: bool = True) -> tuple[Session, bool]:
    """Stop the process tree; the row stays and becomes `exited` once the process has ended.

    Returns (the row, whether the stop is still under way): with `wait` the row is already
    `exited`; without, the hang-up is sent and the live list shows `exited` when it happens.
    Stopping an ended session is a no-op."""
    session = await database_sync_to_async(_session_or_404)(session_id)
    if not session.is_live:
        return session, False
    user = Session.EndedBy.USER
    if not wait and await _host().stop_soon(str(session.id), by=user):
        return session, True
    await _host().stop(str(session.id), by=user)
    code = _host().terminal_exit_code(str(session.id))
    await database_sync_to_async(session_mark_exited)(
        session_id=str(session.id), exit_code=code, ended_by=user
    )
    await database_sync_to_async(session.refresh_from_db)()
    return session, False


def session_stop(*, session_id: str, wait: bool = True) -> tuple[Session, bool]:
    """The sync edge of asession_stop (DRF views)."""
    return async_to_sync(asession_stop)(session_id=session_id, wait=wait)


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
def session_event_append(*, session_id: str, kind: str, payload: dict) -> int:
    """Store one chat event for replay; seq numbers are dense per session."""
    from django.db.models import Max

    from sessions_app.models import SessionEvent

    last = SessionEvent.objects.filter(session_id=session_id).aggregate(m=Max("seq"))["m"]
    seq = (last or 0) + 1
    SessionEvent.objects.create(session_id=session_id, seq=seq, kind=kind, payload=payload)
    _title_from_event(session_id, kind, payload)
    return seq


TITLE_EVENTS = ("user_message_chunk", "session_info_update")


def _title_from_event(session_id: str, kind: str, payload: dict) -> None:
    """A chat's title: the agent's own (ACP `session_info_update`), else its first prompt."""
    if kind not in TITLE_EVENTS:
        return
    text = payload.get("text" if kind == "user_message_chunk" else "title")
    title = " ".join(str(text or "").split())[: Session.TITLE_MAX]
    if not title:
        return
    rows = Session.objects.filter(pk=session_id)
    if kind == "user_message_chunk":
        rows = rows.filter(title="")
    if rows.exclude(title=title).update(title=title):
        from sessions_app import lists

        lists.broadcast_on_commit("sessions")
