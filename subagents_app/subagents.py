"""Subagent turns (contract §4): argument checks, rows and worktrees, snapshots, cleanup.

Synchronous services; the turn itself runs on the daemon's event loop (subagent_runs.py).
Refusals say what to send instead: they reach an agent as its tool error.
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path
from typing import Any, Protocol

from asgiref.sync import async_to_sync
from django.db import transaction
from django.utils import timezone

from core import config
from core.errors import DomainError, NotFound
from sessions_app import agents as agent_registry
from sessions_app import services
from sessions_app.models import Session
from subagents_app import worktrees
from subagents_app.models import Subagent, SubagentTurn


class Runs(Protocol):
    """The running turns (subagent_runs.py's `SubagentRuns`, which imports this module)."""

    async def cancel(self, turn_id: str) -> bool: ...


MAX_AGENTS = 8
WAIT_MIN_S, WAIT_MAX_S, WAIT_DEFAULT_S = 1, 3600, 600
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
ENDED = ("done", "failed", "cancelled")


def _check_agents(agents: list[dict[str, Any]], shared_task: str) -> None:
    if not isinstance(agents, list) or not 1 <= len(agents) <= MAX_AGENTS:
        count = len(agents) if isinstance(agents, list) else "no list"
        raise DomainError(
            f"agents must list 1 to {MAX_AGENTS} subagents as "
            f'[{{"name": "a", "agent": "claude", "task": "…"}}], got {count}'
        )
    seen: set[str] = set()
    for entry in agents:
        name = str(entry.get("name") or "").strip()
        if not name:
            raise DomainError('every subagent needs a non-blank "name" (e.g. "tests")')
        if not _NAME.match(name):
            raise DomainError(
                f"subagent name {name!r} must be letters, digits, '.', '_' or '-' (it names a "
                "git branch and a folder), at most 64 characters"
            )
        if name in seen:
            raise DomainError(f"subagent name {name!r} is used twice; give each a different name")
        seen.add(name)
        _check_agent(str(entry.get("agent") or ""))
        _check_profile(str(entry.get("profile_id") or ""))
        if not str(entry.get("task") or "").strip() and not shared_task.strip():
            raise DomainError(f"subagent {name!r} has no task: give it one, or pass a shared task")


def _check_agent(agent: str) -> None:
    definition = agent_registry.get_agent(agent)
    if definition is None or not definition.enabled or not definition.acp_command:
        usable = [
            a.name for a in agent_registry.all_agents().values() if a.enabled and a.acp_command
        ]
        why = "unknown" if definition is None else "not usable (not enabled or no ACP command)"
        raise DomainError(f"agent {agent!r} is {why}; use one of: {', '.join(usable) or 'none'}")


def _check_profile(profile_id: str) -> None:
    known = config.current_settings().profiles
    if profile_id and profile_id not in known:
        raise DomainError(
            f"unknown profile {profile_id!r}; use one of: {', '.join(known) or 'none declared'}"
        )


def _check_cwd(cwd: str) -> str:
    path = Path(cwd or "").expanduser()
    if not cwd or not path.is_absolute() or not path.is_dir():
        raise DomainError(f"cwd must be an existing directory (absolute path), got {cwd!r}")
    return str(path.resolve())


def turn_create(
    *,
    mode: str,
    cwd: str,
    agents: list[dict[str, Any]],
    task: str = "",
    parent_session_id: str | None = None,
) -> SubagentTurn:
    """Check everything, then record the turn, its subagents and (for worktree modes on a clean
    repository) their worktrees; the caller starts it (SubagentRuns.start)."""
    if mode not in SubagentTurn.Mode.values:
        modes = ", ".join(SubagentTurn.Mode.values)
        raise DomainError(f"mode must be one of {modes}, got {mode!r}")
    cwd = _check_cwd(cwd)
    task = task or ""
    _check_agents(agents, task)
    parent = Session.objects.filter(pk=parent_session_id).first() if parent_session_id else None
    base = worktrees.clean_base(cwd) if mode != "brainstorming" else None
    turn = SubagentTurn.objects.create(
        mode=mode,
        cwd=cwd,
        task=task,
        parent_session=parent,
        repo=base.toplevel if base else "",
        base_commit=base.commit if base else "",
    )
    for position, entry in enumerate(agents):
        Subagent.objects.create(
            turn=turn,
            position=position,
            name=entry["name"].strip(),
            agent=entry["agent"],
            task=str(entry.get("task") or ""),
            profile_id=str(entry.get("profile_id") or ""),
            workspace=cwd,
        )
    try:
        if base is not None:
            _make_worktrees(turn, base)
        _make_sessions(turn)
    except (worktrees.GitError, DomainError) as exc:
        turn_cleanup(turn_id=str(turn.id))
        Session.objects.filter(subagent__turn=turn).delete()
        turn.delete()
        if isinstance(exc, DomainError):
            raise
        raise DomainError(f"could not make the git worktrees: {exc}") from exc
    return turn


def _make_sessions(turn: SubagentTurn) -> None:
    """Each subagent's session exists (`starting`) before its agent runs, so the caller of
    initialize_subagents can follow every subagent by its session id at once (contract §4)."""
    for subagent in turn.subagents.all():
        subagent.session = services.session_row_create(
            agent=subagent.agent,
            workspace=subagent.workspace,
            kind="subagent",
            profile_id=subagent.profile_id,
            title=f"subagent {subagent.name}",
        )
        subagent.save(update_fields=["session"])


def subagent_session(subagent_id: str) -> Session:
    session = Subagent.objects.select_related("session").get(pk=subagent_id).session
    if session is None:
        raise DomainError("this subagent has no session (its turn was made before svc gave one)")
    return session


def _make_worktrees(turn: SubagentTurn, base: worktrees.Base) -> None:
    """Each worktree is recorded as soon as it exists, so a git failure part-way leaves the
    cleanup a complete list of what to remove."""
    shared = turn.mode == "collaboration"  # one worktree, shared, named after the turn
    made: dict[str, Path] = {}
    for subagent in turn.subagents.all():
        name = "shared" if shared else subagent.name
        if name not in made:
            subagent.branch = worktrees.branch_name(str(turn.id), name)
            subagent.save(update_fields=["branch"])
            made[name] = worktrees.add(base, str(turn.id), name)
        top = made[name]
        subagent.workspace = str(top / base.subdir) if base.subdir else str(top)
        subagent.branch = worktrees.branch_name(str(turn.id), name)
        subagent.save(update_fields=["workspace", "branch"])


def worktree_of(subagent: Subagent) -> str:
    """The top level of a subagent's worktree (its workspace may be a folder inside)."""
    return str(worktrees.root() / str(subagent.turn_id) / subagent.branch.rsplit("/", 1)[-1])


def turn_get(turn_id: str) -> SubagentTurn:
    turn = SubagentTurn.objects.filter(pk=turn_id).first() if _is_uuid(turn_id) else None
    if turn is None:
        raise NotFound(
            f"no subagent turn {turn_id!r}; pass the turn_id initialize_subagents returned"
        )
    return turn


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def subagent_dict(subagent: Subagent) -> dict[str, Any]:
    return {
        "id": str(subagent.id),
        "name": subagent.name,
        "agent": subagent.agent,
        "task": subagent.task,
        "profile_id": subagent.profile_id,
        "session_id": str(subagent.session_id) if subagent.session_id else None,
        "workspace": subagent.workspace,
        "branch": subagent.branch,
        "status": subagent.status,
        "summary": subagent.summary,
        "report": subagent.report,
        "changes": subagent.changes,
        "final_message": subagent.final_message,
        "started_at": subagent.started_at.isoformat() if subagent.started_at else None,
        "finished_at": subagent.finished_at.isoformat() if subagent.finished_at else None,
    }


def turn_dict(turn: SubagentTurn) -> dict[str, Any]:
    return {
        "turn_id": str(turn.id),
        "mode": turn.mode,
        "cwd": turn.cwd,
        "task": turn.task,
        "status": turn.status,
        "repo": turn.repo,
        "base_commit": turn.base_commit,
        "parent_session_id": str(turn.parent_session_id) if turn.parent_session_id else None,
        "created_at": turn.created_at.isoformat(),
        "finished_at": turn.finished_at.isoformat() if turn.finished_at else None,
        "subagents": [subagent_dict(s) for s in turn.subagents.all()],
    }


def turn_snapshot(turn_id: str) -> dict[str, Any]:
    return turn_dict(turn_get(turn_id))


def turn_list(limit: int = 50) -> list[dict[str, Any]]:
    turns = SubagentTurn.objects.prefetch_related("subagents")[:limit]
    return [turn_dict(t) for t in turns]


def turns_of_parent(session_id: str) -> list[str]:
    running = SubagentTurn.objects.filter(parent_session_id=session_id, status="running")
    return [str(pk) for pk in running.values_list("pk", flat=True)]


# --- state changes (called from the run on the event loop, through sync_to_async) -------------


def subagent_update(subagent_id: str, **fields: Any) -> None:
    if fields.get("status") == "running":
        fields.setdefault("started_at", timezone.now())
    if fields.get("status") in ENDED:
        fields.setdefault("finished_at", timezone.now())
    Subagent.objects.filter(pk=subagent_id).update(**fields)


@transaction.atomic
def subagents_unfinished_end(turn_id: str, status: str, summary: str) -> None:
    """Subagents that never got to run (or were cut off) end with `status` and why, and so do
    the sessions made for them whose agent never started."""
    unfinished = Subagent.objects.filter(turn_id=turn_id).exclude(status__in=ENDED)
    never_started = Session.objects.filter(
        pk__in=unfinished.values("session_id"), status=Session.Status.STARTING, pid__isnull=True
    )
    for session in never_started.select_for_update():
        if session.mark_exited(None, failed=status == "failed"):
            session.save()
    unfinished.update(status=status, summary=summary, finished_at=timezone.now())


@transaction.atomic
def turn_finish(turn_id: str, status: str) -> None:
    SubagentTurn.objects.filter(pk=turn_id, status="running").update(
        status=status, finished_at=timezone.now()
    )


def turns_reconcile() -> int:
    """At start: turns that were running when svc stopped cannot go on (their agents died with
    it); they end `cancelled`, each unfinished subagent `failed` with the reason."""
    running = list(SubagentTurn.objects.filter(status="running").values_list("pk", flat=True))
    for turn_id in running:
        subagents_unfinished_end(str(turn_id), "failed", "svc stopped while this subagent ran")
        turn_finish(str(turn_id), "cancelled")
    return len(running)


def turn_cancel(*, runs: Runs, turn_id: str, cleanup: bool = False) -> dict[str, Any]:
    """Cancel a running turn (a finished one is left as it is) and, with `cleanup`, remove its
    worktrees and branches; returns the turn as it is then, with what was removed."""
    turn_get(turn_id)
    cancelled = async_to_sync(runs.cancel)(turn_id)
    removed = turn_cleanup(turn_id=turn_id) if cleanup else []
    return {**turn_snapshot(turn_id), "cancelled": cancelled, "removed_branches": removed}


def turn_cleanup(*, turn_id: str) -> list[str]:
    """Remove the turn's worktrees and branches; returns the branches removed."""
    turn = SubagentTurn.objects.filter(pk=turn_id).first()
    if turn is None or not turn.repo:
        return []
    branches = sorted({s.branch for s in turn.subagents.all() if s.branch})
    for branch in branches:
        path = str(worktrees.root() / turn_id / branch.rsplit("/", 1)[-1])
        worktrees.remove(turn.repo, path, branch)
    shutil.rmtree(worktrees.root() / turn_id, ignore_errors=True)
    return branches
