"""Editing one agent's entry in settings.json (contract §1) from the dashboard or /api/.

settings.json stays the source of truth: a save replaces only the keys an agent entry is known to
have (`enabled`, `command`, `acp_command`, `env`) and keeps every other key of that entry, of the
`agents` object and of the file as it was. For a built-in agent the entry is an override.
"""

from __future__ import annotations

import re
from typing import Any

from core import config
from core import settings_store as settings_services
from core.errors import DomainError, NotFound
from sessions_app import agent_check as checks
from sessions_app import agents as agent_registry
from sessions_app.models import Agent

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_builtin(name: str) -> bool:
    return name == "shell" or name in agent_registry.BUILTIN_NAMES


def _declared() -> dict[str, Any]:
    agents = config.current_settings().raw.get("agents") or {}
    return dict(agents) if isinstance(agents, dict) else {}


def agent_save(
    *,
    name: str,
    enabled: bool | None = None,
    command: list[str] | None = None,
    acp_command: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[Agent, bool]:
    """Write the agent's known keys (an empty or null one is removed from the entry, so a
    built-in falls back to its own value); answers the mirrored row and whether the entry is new."""
    if not config.ID_PATTERN.match(name):
        raise DomainError(
            f"invalid agent name {name!r}: lower-case letters, digits, '-' and '_', "
            f"starting with a letter or digit (at most 64)"
        )
    for key in env or {}:
        if not ENV_NAME.match(key):
            raise DomainError(f"env: {key!r} is not a variable name (letters, digits and '_')")
    with settings_services.SETTINGS_LOCK:  # read, change and write as one
        agents = _declared()
        created = name not in agents
        entry = dict(agents[name]) if isinstance(agents.get(name), dict) else {}
        known = {"enabled": enabled, "command": command, "acp_command": acp_command, "env": env}
        for key, value in known.items():
            if value is None or value == [] or value == {}:
                entry.pop(key, None)
            else:
                entry[key] = value
        if not is_builtin(name) and not (entry.get("command") or entry.get("acp_command")):
            raise DomainError(
                f"agent {name!r} is not a built-in one: give it a command (interactive terminal) "
                f"or an acp_command (ACP on stdio)"
            )
        agents[name] = entry
        settings_services.settings_update(changes={"agents": agents})
    return Agent.objects.get(name=name), created


def agent_remove(*, name: str) -> None:
    """Drop the agent's entry from settings.json: a built-in goes back to its defaults, an agent
    declared there goes away."""
    with settings_services.SETTINGS_LOCK:
        agents = _declared()
        if name not in agents:
            raise NotFound(f"agent {name!r} has no entry in settings.json")
        del agents[name]
        settings_services.settings_update(changes={"agents": agents})


def agent_check(name: str) -> checks.Check | None:
    """Whether the agent's entry, as stored, will start (issue 34): what PUT answers and POST
    /api/agents/{name}/check. The stored values, not a client's: a value sent back redacted was
    kept, not replaced by the marker. None when the entry has no command of its own (a built-in
    with an override of `enabled` or `env` only)."""
    stored = config.current_settings().agents.get(name)
    if stored is None:
        return None
    return checks.check(
        command=list(stored.command), acp_command=list(stored.acp_command), env=dict(stored.env)
    )
