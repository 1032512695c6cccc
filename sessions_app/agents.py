"""The agent registry: built-in agents merged with settings.json `agents` (SPEC §1).

An agent resolves to the argv of its interactive terminal (`command`) and, when it speaks ACP on
stdio, the argv of that mode (`acp_command`). PATH detection decides whether a built-in is enabled
when settings do not say.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from svcproject import config


@dataclass(frozen=True)
class AgentDef:
    name: str
    command: tuple[str, ...]
    acp_command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    builtin: bool = False
    source: str = "builtin"
    enabled: bool = False
    executable_found: bool = False

    @property
    def supports_chat(self) -> bool:
        return bool(self.acp_command)


def _user_shell() -> str:
    return os.environ.get("SHELL") or shutil.which("bash") or "/bin/sh"


# Interactive command, ACP launch. The ACP adapters for Claude Code and Codex come from npm.
_BUILTINS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "claude": (("claude",), ("npx", "-y", "@zed-industries/claude-code-acp")),
    "codex": (("codex",), ("npx", "-y", "@zed-industries/codex-acp")),
    "gemini": (("gemini",), ("gemini", "--experimental-acp")),
    "opencode": (("opencode",), ("opencode", "acp")),
    "qwen": (("qwen",), ("qwen", "--experimental-acp")),
}


def _found(argv: tuple[str, ...]) -> bool:
    return bool(argv) and shutil.which(argv[0]) is not None


def builtin_agents() -> dict[str, AgentDef]:
    shell = (_user_shell(), "-l")
    agents = {
        "shell": AgentDef(
            "shell", shell, builtin=True, enabled=True, executable_found=_found(shell)
        )
    }
    for name, (command, acp) in _BUILTINS.items():
        found = _found(command)
        agents[name] = AgentDef(
            name, command, acp, builtin=True, enabled=found, executable_found=found
        )
    return agents


def _merge(base: AgentDef | None, spec: config.AgentSpec) -> AgentDef:
    command = spec.command or (base.command if base else ())
    acp = spec.acp_command or (base.acp_command if base else ())
    found = _found(command) or _found(acp)
    enabled = spec.enabled if spec.enabled is not None else found
    return AgentDef(
        name=spec.name,
        command=command,
        acp_command=acp,
        env=dict(spec.env),
        builtin=base is not None,
        source="both" if base else "settings",
        enabled=enabled,
        executable_found=found,
    )


def all_agents(settings: config.Settings | None = None) -> dict[str, AgentDef]:
    settings = settings or config.current_settings()
    agents = builtin_agents()
    for name, spec in settings.agents.items():
        agents[name] = _merge(agents.get(name), spec)
    return dict(sorted(agents.items()))


def get_agent(name: str) -> AgentDef | None:
    return all_agents().get(name)
