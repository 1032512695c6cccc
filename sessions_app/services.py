"""Writes for sessions, workspaces, agents and channels; each one transaction."""

from __future__ import annotations

import os
from pathlib import Path

from django.db import transaction

from sessions_app import agents as agent_registry
from sessions_app.models import Agent, Channel, Session, Tunnel, Workspace
from svcproject import config


class ServiceError(Exception):
    """A request the domain refuses; the message says what to send instead."""

    status = 400


class NotFound(ServiceError):
    status = 404


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
    """At start: live sessions whose process is gone become `exited` (rows are never deleted)."""
    ended = 0
    for session in Session.objects.select_for_update().filter(status__in=Session.LIVE):
        if not _pid_alive(session.pid) and session.mark_exited(session.exit_code):
            session.save(update_fields=["status", "exit_code", "ended_at", "updated_at"])
            ended += 1
    return ended


def _normalise_workspace(path: str) -> Path:
    if not path or not os.path.isabs(path):
        raise ServiceError(f"workspace path must be absolute, got {path!r}")
    resolved = Path(path).resolve()
    if not resolved.is_dir():
        raise ServiceError(f"workspace {path!r} is not an existing directory")
    return resolved


def workspace_register(*, path: str, name: str = "") -> tuple[Workspace, bool]:
    """Idempotent: the same directory always maps to one row; also recorded in settings.json."""
    resolved = _normalise_workspace(path)
    with transaction.atomic():
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


def workspace_delete(*, workspace_id: int) -> None:
    with transaction.atomic():
        workspace = Workspace.objects.filter(pk=workspace_id).first()
        if workspace is None:
            raise NotFound(f"no workspace with id {workspace_id}")
        workspace.delete()
    declared = list(config.current_settings().workspaces)
    if workspace.path in declared:
        config.update_settings({"workspaces": [p for p in declared if p != workspace.path]})


@transaction.atomic
def workspaces_sync(settings: config.Settings) -> None:
    for path in settings.workspaces:
        Workspace.objects.get_or_create(path=path, defaults={"name": Path(path).name})


@transaction.atomic
def agents_sync(settings: config.Settings) -> None:
    """Mirror the merged agent table; settings.json stays the source of truth."""
    merged = agent_registry.all_agents(settings)
    for agent in merged.values():
        Agent.objects.update_or_create(
            name=agent.name,
            defaults={
                "builtin": agent.builtin,
                "command": list(agent.command),
                "acp_command": list(agent.acp_command),
                "enabled": agent.enabled,
                "executable_found": agent.executable_found,
                "source": agent.source,
            },
        )
    Agent.objects.exclude(name__in=merged).delete()


def _declared(section: dict, name: str) -> dict:
    entry = section.get(name)
    return entry if isinstance(entry, dict) else {}


@transaction.atomic
def channels_sync(settings: config.Settings) -> None:
    """The built-in `web` channel plus those settings.json declares (kind and enabled only:
    channel entries may hold secrets, which stay in the file)."""
    Channel.objects.get_or_create(
        name="web", defaults={"kind": "web", "builtin": True, "status": "ready"}
    )
    declared = settings.raw.get("channels") or {}
    for name in declared:
        entry = _declared(declared, name)
        Channel.objects.update_or_create(
            name=name,
            defaults={
                "kind": str(entry.get("kind", name)),
                "enabled": entry.get("enabled", True) is not False,
                "builtin": name == "web",
            },
        )
    Channel.objects.filter(builtin=False).exclude(name__in=list(declared)).delete()


@transaction.atomic
def tunnels_sync(settings: config.Settings) -> None:
    declared = settings.raw.get("tunnels") or {}
    for name in declared:
        entry = _declared(declared, name)
        port = entry.get("port")
        Tunnel.objects.update_or_create(
            name=name,
            defaults={
                "kind": str(entry.get("kind", "")),
                "target_port": port if isinstance(port, int) else None,
            },
        )
    Tunnel.objects.exclude(name__in=list(declared)).delete()


def settings_sync() -> config.Settings:
    """Mirror settings.json into the database (profiles, agents, workspaces, channels)."""
    from bridge_app import services as bridge_services

    settings = config.current_settings()
    bridge_services.profiles_sync(settings)
    agents_sync(settings)
    workspaces_sync(settings)
    channels_sync(settings)
    tunnels_sync(settings)
    return settings
