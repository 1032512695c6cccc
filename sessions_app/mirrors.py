"""settings.json mirrored into the database (contract §1): agents, workspaces, channels and
tunnels, so admin and /api/ show them. settings.json stays the source of truth; each mirror is
one transaction and writes only the rows that changed."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from core import config
from sessions_app import agents as agent_registry
from sessions_app.models import Agent, Workspace


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
