"""settings.json mirrored into the database (contract §1): agents, workspaces, channels and
tunnels, so admin and /api/ show them. settings.json stays the source of truth; each mirror is
one transaction and writes only the rows that changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction

from sessions_app import agents as agent_registry
from sessions_app.models import Agent, Channel, Tunnel, Workspace
from svcproject import config


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


def _mirror(model: type[Channel] | type[Tunnel], wanted: dict[str, dict], stale: Any) -> None:
    """Write only rows that changed: every save pushes a live list to every subscriber."""
    existing = {row.name: row for row in model.objects.all()}
    for name, fields in wanted.items():
        row = existing.get(name)
        if row is None:
            model.objects.create(name=name, **fields)
        elif any(getattr(row, key) != value for key, value in fields.items()):
            for key, value in fields.items():
                setattr(row, key, value)
            row.save()
    for row in stale.exclude(name__in=list(wanted)):
        row.delete()


@transaction.atomic
def channels_sync(settings: config.Settings) -> None:
    """The built-in `web` channel plus those settings.json declares (kind and enabled only:
    channel entries may hold secrets, which stay in the file)."""
    declared = settings.raw.get("channels") or {}
    wanted = {"web": {"kind": "web", "builtin": True, "enabled": True}}
    for name in declared:
        entry = _declared(declared, name)
        wanted[name] = {
            "kind": str(entry.get("kind", name)),
            "enabled": entry.get("enabled", True) is not False,
            "builtin": name == "web",
        }
    _mirror(Channel, wanted, Channel.objects.all())


@transaction.atomic
def tunnels_sync(settings: config.Settings) -> None:
    declared = settings.raw.get("tunnels") or {}
    wanted = {}
    for name in declared:
        entry = _declared(declared, name)
        port = entry.get("port")
        wanted[name] = {
            "kind": str(entry.get("provider", "")),
            "target_port": port if isinstance(port, int) else None,
        }
    _mirror(Tunnel, wanted, Tunnel.objects.all())
