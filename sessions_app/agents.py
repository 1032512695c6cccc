"""The agent registry: built-in agents merged with settings.json `agents` (contract §1), and how a
session of one is launched: argv, environment and per-session configuration (contract §0).

An agent resolves to the argv of its interactive terminal (`command`) and, when it speaks ACP on
stdio, the argv of that mode (`acp_command`). PATH detection decides whether a built-in is enabled
when settings do not say. A session bound to a profile gets its model traffic pointed at svc's
bridge, `/svc/local-api/{profile}/{agent}/{dialect}`, in the way each vendor's CLI reads it
(docs/agents.md has the table and the reasons).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field

from core import config


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
    # The built-in this agent is (or overrides): decides how a profile is bound to it.
    vendor: str = ""


def _user_shell() -> str:
    return os.environ.get("SHELL") or shutil.which("bash") or "/bin/sh"


@dataclass(frozen=True)
class _Builtin:
    command: tuple[str, ...]
    acp: tuple[str, ...]
    # The npm package of a separate ACP adapter: run with `npx` only when it is not installed.
    adapter: str = ""
    env: dict[str, str] = field(default_factory=dict)
    # The npm package of its CLI: how a person installs it (install_hint).
    npm: str = ""


def _claude_env() -> dict[str, str]:
    # As root, claude-agent-acp starts Claude Code with --allow-dangerously-skip-permissions,
    # which Claude Code refuses for root unless it is told it runs in a sandbox.
    return {"IS_SANDBOX": "1"} if os.geteuid() == 0 else {}


def _builtins() -> dict[str, _Builtin]:
    return {
        "claude": _Builtin(
            ("claude",),
            ("claude-agent-acp",),
            adapter="@zed-industries/claude-agent-acp@0.23.1",
            env=_claude_env(),
            npm="@anthropic-ai/claude-code",
        ),
        "codex": _Builtin(
            ("codex",),
            ("codex-acp",),
            adapter="@zed-industries/codex-acp@0.16.0",
            npm="@openai/codex",
        ),
        # svc starts sessions only in folders its owner chose; an untrusted folder would hide the
        # user-level MCP servers, svc's own among them.
        "gemini": _Builtin(
            ("gemini",),
            ("gemini", "--acp"),
            env={"GEMINI_CLI_TRUST_WORKSPACE": "true"},
            npm="@google/gemini-cli",
        ),
        "opencode": _Builtin(("opencode",), ("opencode", "acp"), npm="opencode-ai"),
        "qwen": _Builtin(("qwen",), ("qwen", "--acp"), npm="@qwen-code/qwen-code"),
    }


BUILTIN_NAMES = ("claude", "codex", "gemini", "opencode", "qwen")

# How each built-in's interactive terminal continues its latest conversation in the folder
# (contract §17: a resumed terminal of a built-in agent starts again with its own resume flag).
# Codex takes a subcommand; the others a flag.
RESUME_ARGS = {
    "claude": ("--continue",),
    "codex": ("resume", "--last"),
    "gemini": ("--resume", "latest"),
    "opencode": ("--continue",),
    "qwen": ("--continue",),
}


def _found(argv: tuple[str, ...]) -> bool:
    return bool(argv) and shutil.which(argv[0]) is not None


def install_hint(name: str) -> dict[str, object] | None:
    """How a person installs a built-in agent's CLI (None for `shell` and any other agent): the
    one place that says it, read by GET /api/agents (the dashboard's "not installed" list, the
    settings table). A chat's ACP adapter needs no step of its own: `npx` runs it (_acp_argv)."""
    spec = _builtins().get(name)
    if spec is None or not spec.npm:
        return None
    return {
        "manager": "npm",
        "packages": [spec.npm],
        "command": f"npm install -g {spec.npm}",
        # Without npm the line cannot be followed as it is: the page says to get Node.js first.
        "manager_found": _found(("npm",)),
    }


def _acp_argv(spec: _Builtin) -> tuple[str, ...]:
    """The installed adapter on PATH; else, when npx exists, the pinned npm package."""
    if _found(spec.acp) or not spec.adapter or not _found(("npx",)):
        return spec.acp
    return ("npx", "-y", spec.adapter)


def builtin_agents() -> dict[str, AgentDef]:
    return {name: _builtin_agent(name) for name in ("shell", *BUILTIN_NAMES)}


def _builtin_agent(name: str) -> AgentDef:
    if name == "shell":
        shell = (_user_shell(), "-l")
        return AgentDef("shell", shell, builtin=True, enabled=True, executable_found=_found(shell))
    spec = _builtins()[name]
    found = _found(spec.command)
    return AgentDef(
        name,
        spec.command,
        _acp_argv(spec),
        env=dict(spec.env),
        builtin=True,
        enabled=found,
        executable_found=found,
        vendor=name,
    )


def _merge(base: AgentDef | None, spec: config.AgentSpec) -> AgentDef:
    command = spec.command or (base.command if base else ())
    acp = spec.acp_command or (base.acp_command if base else ())
    found = _found(command) or _found(acp)
    enabled = spec.enabled if spec.enabled is not None else found
    return AgentDef(
        name=spec.name,
        command=command,
        acp_command=acp,
        env={**(base.env if base else {}), **spec.env},
        builtin=base is not None,
        source="both" if base else "settings",
        enabled=enabled,
        executable_found=found,
        vendor=base.vendor if base else "",
    )


def all_agents(settings: config.Settings | None = None) -> dict[str, AgentDef]:
    settings = settings or config.current_settings()
    agents = builtin_agents()
    for name, spec in settings.agents.items():
        agents[name] = _merge(agents.get(name), spec)
    return dict(sorted(agents.items()))


def get_agent(name: str) -> AgentDef | None:
    """As `all_agents()[name]`, without looking up every other agent's executable on PATH
    (a session start asks for one; the PATH lookups of all six were ~1 ms of its ~17)."""
    builtin = _builtin_agent(name) if name in ("shell", *BUILTIN_NAMES) else None
    spec = config.current_settings().agents.get(name)
    return builtin if spec is None else _merge(builtin, spec)


# --- launching: argv + environment for a session (contract §0) ----------------------------------

# Variables of svc's own process that must not reach agents: svc's own knobs (SVC_HOME would
# lead an agent straight to auth.json and the owner token), its settings module and database.
# Agents get exactly the SVC_* variables contract §0 lists, set below.
_DAEMON_ONLY_ENV = ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")


def _inherited(name: str, fleet_secret_env: str = "") -> bool:
    # The fleet secret's variable (settings `fleet.secret_env`, any name) is a key to every
    # member's sessions (contract §18): never an agent's.
    return not name.startswith("SVC_") and name not in (*_DAEMON_ONLY_ENV, fleet_secret_env)


# svc ignores the key a client sends and uses the profile's own (contract §5); CLIs insist on one.
DUMMY_KEY = "svc-bridge"


@dataclass(frozen=True)
class Launch:
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str


def bridge_url(profile_id: str, agent: str, port: int | None = None) -> str:
    port = port or config.svc_port()
    return f"http://127.0.0.1:{port}/svc/local-api/{profile_id}/{agent}"


def profile_model(profile_id: str) -> str:
    """The model a bound session asks for: the profile's first client-facing id."""
    profile = config.current_settings().profiles.get(profile_id)
    ids = profile.client_model_ids() if profile else []
    return ids[0] if ids else ""


def _model_env(model: str) -> dict[str, str]:
    if not model:
        return {}
    env = {"OPENAI_MODEL": model, "ANTHROPIC_MODEL": model, "GEMINI_MODEL": model}
    # Claude Code picks its model from aliases (sonnet/opus/haiku), not ANTHROPIC_MODEL, when
    # an ACP client selects "default"; each alias must name a model the profile serves.
    for alias in ("SONNET", "OPUS", "HAIKU"):
        env[f"ANTHROPIC_DEFAULT_{alias}_MODEL"] = model
    return env


def _opencode_config(base: str, model: str) -> str:
    """OpenCode reads providers from config only; OPENCODE_CONFIG_CONTENT adds one for this
    session on top of the user's own config files, which stay untouched."""
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "svc",
        "options": {"baseURL": f"{base}/openai-chat/v1", "apiKey": DUMMY_KEY},
        "models": {model: {"name": model}} if model else {},
    }
    content: dict = {"provider": {"svc": provider}}
    if model:
        content.update(model=f"svc/{model}", small_model=f"svc/{model}")
    return json.dumps(content)


def bridge_scope(agent: str, session_id: str = "") -> str:
    """A hosted session's bridge scope names its agent and the session (`{agent}.{session_id}`,
    contract §0), so its model traffic is attributed to it (§16); without a session, the
    agent's name."""
    return f"{agent}.{session_id}" if session_id else agent


def profile_env(
    profile_id: str, agent: str, vendor: str = "", session_id: str = ""
) -> dict[str, str]:
    """The bridge base URL and the vendor variables the built-in agents read, each with a dummy
    key, plus the session's model and the per-vendor configuration that needs an environment."""
    base = bridge_url(profile_id, bridge_scope(agent, session_id))
    # Codex speaks only the Responses API to custom providers; the other OpenAI-flavoured agents
    # speak Chat Completions.
    openai_dialect = "openai-responses" if vendor == "codex" else "openai-chat"
    model = profile_model(profile_id)
    env = {
        "SVC_BRIDGE_URL": base,
        "OPENAI_BASE_URL": f"{base}/{openai_dialect}/v1",
        "OPENAI_API_KEY": DUMMY_KEY,
        "ANTHROPIC_BASE_URL": f"{base}/anthropic",
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        "GOOGLE_GEMINI_BASE_URL": f"{base}/gemini",
        "GEMINI_API_KEY": DUMMY_KEY,
        **_model_env(model),
    }
    if vendor == "opencode":
        env["OPENCODE_CONFIG_CONTENT"] = _opencode_config(base, model)
    return env


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


def profile_args(profile_id: str, agent: str, vendor: str, session_id: str = "") -> tuple[str, ...]:
    """Per-session command-line configuration: Codex takes its provider only from config, and
    `-c key=value` overrides ~/.codex/config.toml for this process without writing it. Qwen
    would otherwise keep an auth type chosen in its settings (e.g. its own OAuth)."""
    if vendor == "qwen":
        return ("--auth-type", "openai")
    if vendor != "codex":
        return ()
    base = f"{bridge_url(profile_id, bridge_scope(agent, session_id))}/openai-responses/v1"
    provider = (
        f"{{name={_toml_string('svc')}, base_url={_toml_string(base)}, "
        f'env_key="OPENAI_API_KEY", wire_api="responses"}}'
    )
    args = ["-c", 'model_provider="svc"', "-c", f"model_providers.svc={provider}"]
    model = profile_model(profile_id)
    if model:
        args += ["-c", f"model={_toml_string(model)}"]
    return tuple(args)


def session_env(
    agent: AgentDef, *, session_id: str, workspace: str, profile_id: str = ""
) -> dict[str, str]:
    auth = config.current_auth()
    secret_env = config.current_settings().fleet.secret_env
    env = {k: v for k, v in os.environ.items() if _inherited(k, secret_env)}
    env.update(TERM="xterm-256color", COLORTERM="truecolor")
    if profile_id:
        env.update(profile_env(profile_id, agent.name, agent.vendor, session_id))
    env.update(agent.env)  # the agent's own env (settings) may still choose another model
    env.update(
        SVC_SESSION_ID=session_id,
        SVC_AGENT=agent.name,
        SVC_WORKSPACE=workspace,
        SVC_PROFILE_ID=profile_id,
        SVC_MCP_URL=f"http://127.0.0.1:{config.svc_port()}/mcp",
        SVC_MCP_TOKEN=auth.mcp_token,
    )
    return env


def resolve_launch(
    agent: AgentDef,
    *,
    kind: str,
    session_id: str,
    workspace: str,
    profile_id: str = "",
    resume: bool = False,
) -> Launch:
    """argv for the session kind (`terminal` → command, others → acp_command) plus environment.
    `resume`: a terminal of a built-in agent continues its latest conversation (RESUME_ARGS)."""
    argv = agent.command if kind == "terminal" else agent.acp_command
    if not argv:
        mode = "interactive `command`" if kind == "terminal" else "`acp_command` (ACP on stdio)"
        raise ValueError(f"agent {agent.name!r} has no {mode}, so it cannot run {kind} sessions")
    if resume and kind == "terminal" and agent.vendor in RESUME_ARGS:
        argv = (*argv, *RESUME_ARGS[agent.vendor])
    if profile_id:
        argv = (*argv, *profile_args(profile_id, agent.name, agent.vendor, session_id))
    env = session_env(agent, session_id=session_id, workspace=workspace, profile_id=profile_id)
    return Launch(argv=tuple(argv), env=env, cwd=workspace)
