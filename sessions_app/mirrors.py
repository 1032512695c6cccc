"""settings.json mirrored into the database (contract §1): agents, workspaces, channels and
tunnels, so admin and /api/ show them. settings.json stays the source of truth; each mirror is
one transaction and writes only the rows that changed."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from core import config, settings_store
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


def agents_rescan() -> bool:
    """An agent's CLI installed (or removed) since the last mirror: PATH decides a built-in's
    `executable_found` and, unless settings say, `enabled`, and nothing watches PATH. When the
    mirror no longer matches, everything is mirrored again — the agents' MCP entries and skills
    too (contract §9), so a CLI installed while svc runs gets them — and True is answered.
    Called by GET /api/agents: the dashboard's "Check again" and every reload of its choices."""
    try:
        merged = agent_registry.all_agents()
    except config.SettingsError:
        return False  # no good settings to mirror: the settings banner says why
    seen = {a.name: (a.enabled, a.executable_found) for a in Agent.objects.all()}
    now = {a.name: (a.enabled, a.executable_found) for a in merged.values()}
    if seen == now:
        return False
    settings_store.settings_sync()
    return True
