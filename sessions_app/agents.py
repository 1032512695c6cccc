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


def _user_shell() -> str:
    return os.environ.get("SHELL") or shutil.which("bash") or "/bin/sh"


# Interactive command, ACP launch. The ACP adapters for Claude Code and Codex come from npm.
_BUILTINS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "claude": (("claude",), ("npx", "-y", "@zed-industries/claude-agent-acp")),
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


# --- launching: argv + environment for a session (SPEC §0) ---------------------------------------

# Variables of svc's own process that must not leak into agents (they would point a nested
# `manage.py` at this daemon's settings module or print the owner's login URL).
_DAEMON_ONLY_ENV = ("DJANGO_SETTINGS_MODULE", "SVC_PRINT_LOGIN")
_DUMMY_KEY = "svc-bridge"


@dataclass(frozen=True)
class Launch:
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str


def bridge_url(profile_id: str, agent: str, port: int | None = None) -> str:
    port = port or config.current_auth().port
    return f"http://127.0.0.1:{port}/svc/local-api/{profile_id}/{agent}"


def profile_env(profile_id: str, agent: str) -> dict[str, str]:
    """The bridge base URL and the vendor variables built-in agents read, each with a dummy key:
    svc ignores the key a client sends and uses the profile's own (SPEC §5)."""
    base = bridge_url(profile_id, agent)
    # Codex speaks the Responses API; the other OpenAI-flavoured agents speak Chat Completions.
    openai_dialect = "openai-responses" if agent == "codex" else "openai-chat"
    return {
        "SVC_BRIDGE_URL": base,
        "OPENAI_BASE_URL": f"{base}/{openai_dialect}/v1",
        "OPENAI_API_KEY": _DUMMY_KEY,
        "ANTHROPIC_BASE_URL": f"{base}/anthropic",
        "ANTHROPIC_API_KEY": _DUMMY_KEY,
        "GOOGLE_GEMINI_BASE_URL": f"{base}/gemini",
        "GEMINI_API_KEY": _DUMMY_KEY,
    }


def session_env(
    agent: AgentDef, *, session_id: str, workspace: str, profile_id: str = ""
) -> dict[str, str]:
    auth = config.current_auth()
    env = {k: v for k, v in os.environ.items() if k not in _DAEMON_ONLY_ENV}
    env.update(TERM="xterm-256color", COLORTERM="truecolor")
    env.update(agent.env)
    if profile_id:
        env.update(profile_env(profile_id, agent.name))
    env.update(
        SVC_SESSION_ID=session_id,
        SVC_AGENT=agent.name,
        SVC_WORKSPACE=workspace,
        SVC_PROFILE_ID=profile_id,
        SVC_MCP_URL=f"http://127.0.0.1:{auth.port}/mcp",
        SVC_MCP_TOKEN=auth.mcp_token,
    )
    return env


def resolve_launch(
    agent: AgentDef, *, kind: str, session_id: str, workspace: str, profile_id: str = ""
) -> Launch:
    """argv for the session kind (`terminal` → command, others → acp_command) plus environment."""
    argv = agent.command if kind == "terminal" else agent.acp_command
    if not argv:
        mode = "interactive `command`" if kind == "terminal" else "`acp_command` (ACP on stdio)"
        raise ValueError(f"agent {agent.name!r} has no {mode}, so it cannot run {kind} sessions")
    env = session_env(agent, session_id=session_id, workspace=workspace, profile_id=profile_id)
    return Launch(argv=tuple(argv), env=env, cwd=workspace)
