"""The shape of settings.json (contract §1): a raw JSON object in, typed `Settings` out, or a
`SettingsError` naming the file, the key and the problem. No file access here: reading and
writing the file is core.config's.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from core import secret_env

ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
PROVIDERS = ("openai-chat", "openai-responses", "anthropic", "gemini")
HOST_ON_EXIT = ("keep", "stop")


class SettingsError(ImproperlyConfigured):
    """settings.json cannot be used; the message names the file, the key (or, for text that is not
    JSON, the line and column, counted from 1) and the problem."""

    def __init__(
        self,
        path: Path,
        key: str,
        problem: str,
        *,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.path, self.key, self.problem = path, key, problem
        self.line, self.column = line, column
        where = f" line {line}, column {column}:" if line is not None else f": {key}:"
        super().__init__(f"{path}{where} {problem}")


@dataclass(frozen=True)
class Profile:
    id: str
    provider: str
    base_url: str
    api_key: str = field(default="", repr=False)
    api_key_env: str = ""
    models: tuple[str, ...] = ()
    model_aliases: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    capabilities: dict[str, bool] = field(default_factory=dict)
    # {"<upstream model>": {"input"|"output"|"cached_input": USD per million tokens}} (§16)
    prices: dict[str, dict[str, float]] = field(default_factory=dict)

    def resolved_key(self) -> str:
        if self.api_key_env:
            return os.environ.get(self.api_key_env, "")
        return self.api_key

    def client_model_ids(self) -> list[str]:
        """Client-facing ids: aliases first, then the upstream models."""
        ids = list(self.model_aliases)
        ids += [m for m in self.models if m not in ids]
        return ids


@dataclass(frozen=True)
class AgentSpec:
    name: str
    command: tuple[str, ...] = ()
    acp_command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    enabled: bool | None = None


FLEET_SECRET_MIN = 32
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class FleetSettings:
    """Contract §18 `fleet`. `enabled` is read once, as the daemon starts (it decides where the
    database's tables live); `machine`, the display name, is read on every heartbeat."""

    enabled: bool = False
    machine: str = ""
    secret_env: str = "SVC_FLEET_SECRET"  # noqa: S105 (a variable name)
    secret: str = field(default="", repr=False)

    def resolved_secret(self) -> str:
        """The inline secret, else the one in the environment variable `secret_env` names."""
        return self.secret or secret_env.get(self.secret_env)


@dataclass(frozen=True)
class LanSettings:
    """Contract §13 `remote.lan`: the remote listener on a LAN address too, with TLS, for a phone
    on the same network (off unless turned on). `address` "" = this machine's LAN address;
    `port` 0 = the remote listener's port number when free there, else any free port."""

    enabled: bool = False
    address: str = ""
    port: int = 0


@dataclass(frozen=True)
class Settings:
    path: Path
    raw: dict[str, Any]
    profiles: dict[str, Profile]
    agents: dict[str, AgentSpec]
    workspaces: tuple[str, ...]
    mcp_auto_install: bool
    skill_auto_install: bool
    local_agent_enabled: bool
    local_agent_agents: tuple[str, ...]
    local_agent_idle_seconds: float = 300.0
    local_agent_conversation_ttl_seconds: float = 7200.0
    remote_port: int = 0  # contract §13: the remote listener's port, 0 = a free one
    # The remote listener's budget (core.connection_budget).
    remote_max_connections: int = 256
    remote_header_timeout_s: float = 10.0
    remote_lan: LanSettings = field(default_factory=LanSettings)
    # Contract §17: what svc's own stop does to hosted sessions ("keep" | "stop"), and whether
    # interrupted chats are resumed at start.
    host_on_exit: str = "keep"
    host_resume_on_start: bool = True
    fleet: FleetSettings = field(default_factory=FleetSettings)
    # The file's mtime when it was read (-1: no file): what the settings watcher compares with.
    loaded_mtime_ns: int = -1


def _expect(path: Path, key: str, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SettingsError(path, key, f"must be {what}, got {type(value).__name__}")


def _str_list(path: Path, key: str, value: Any) -> tuple[str, ...]:
    _expect(path, key, value, list, "a list of strings")
    for i, item in enumerate(value):
        _expect(path, f"{key}[{i}]", item, str, "a string")
    return tuple(value)


def _str_map(path: Path, key: str, value: Any) -> dict[str, str]:
    _expect(path, key, value, dict, "an object of strings")
    for k, v in value.items():
        _expect(path, f"{key}.{k}", v, str, "a string")
    return dict(value)


def _check_id(path: Path, key: str, ident: str) -> None:
    if not ID_PATTERN.match(ident):
        raise SettingsError(path, key, f"invalid id {ident!r} (must match {ID_PATTERN.pattern})")


def _parse_profile(path: Path, pid: str, data: Any) -> Profile:
    key = f"profiles.{pid}"
    _check_id(path, key, pid)
    _expect(path, key, data, dict, "an object")
    provider = data.get("provider")
    if provider not in PROVIDERS:
        raise SettingsError(path, f"{key}.provider", f"must be one of {', '.join(PROVIDERS)}")
    base_url = data.get("base_url")
    _expect(path, f"{key}.base_url", base_url, str, "a URL string")
    if not base_url.startswith(("http://", "https://")):
        raise SettingsError(path, f"{key}.base_url", "must start with http:// or https://")
    for name in ("api_key", "api_key_env"):
        if name in data:
            _expect(path, f"{key}.{name}", data[name], str, "a string")
    caps = data.get("capabilities", {})
    _expect(path, f"{key}.capabilities", caps, dict, "an object of booleans")
    for cap, flag in caps.items():
        _expect(path, f"{key}.capabilities.{cap}", flag, bool, "true or false")
    return Profile(
        id=pid,
        provider=provider,
        base_url=base_url.rstrip("/"),
        api_key=data.get("api_key", ""),
        api_key_env=data.get("api_key_env", ""),
        models=_str_list(path, f"{key}.models", data.get("models", [])),
        model_aliases=_str_map(path, f"{key}.model_aliases", data.get("model_aliases", {})),
        headers=_str_map(path, f"{key}.headers", data.get("headers", {})),
        capabilities=dict(caps),
        prices=_prices(data.get("prices")),
    )


def _prices(data: Any) -> dict[str, dict[str, float]]:
    """Lenient (§16): what is not a number per model and kind is skipped, never an error."""
    kinds = ("input", "output", "cached_input")
    if not isinstance(data, dict):
        return {}
    return {
        model: {
            k: float(v)
            for k, v in entry.items()
            if k in kinds and isinstance(v, int | float) and not isinstance(v, bool)
        }
        for model, entry in data.items()
        if isinstance(model, str) and isinstance(entry, dict)
    }


def _parse_agent(path: Path, name: str, data: Any) -> AgentSpec:
    key = f"agents.{name}"
    _check_id(path, key, name)
    _expect(path, key, data, dict, "an object")
    enabled = data.get("enabled")
    if enabled is not None:
        _expect(path, f"{key}.enabled", enabled, bool, "true or false")
    return AgentSpec(
        name=name,
        command=_str_list(path, f"{key}.command", data.get("command", [])),
        acp_command=_str_list(path, f"{key}.acp_command", data.get("acp_command", [])),
        env=_str_map(path, f"{key}.env", data.get("env", {})),
        enabled=enabled,
    )


def _flag(path: Path, key: str, value: Any, default: bool) -> bool:
    if value is None:
        return default
    _expect(path, key, value, bool, "true or false")
    return value


def _parse_lan(path: Path, lan: Any) -> LanSettings:
    _expect(path, "remote.lan", lan, dict, "an object")
    address = lan.get("address", "")
    _expect(path, "remote.lan.address", address, str, 'an IPv4 address ("" = this machine\'s)')
    if address:
        try:
            socket.inet_pton(socket.AF_INET, address)
        except OSError:
            raise SettingsError(path, "remote.lan.address", "must be an IPv4 address") from None
    port = lan.get("port", 0)
    _expect(path, "remote.lan.port", port, int, "a port number (0 = the remote listener's)")
    if not 0 <= port < 65536:
        raise SettingsError(path, "remote.lan.port", "must be between 0 and 65535")
    enabled = _flag(path, "remote.lan.enabled", lan.get("enabled"), False)
    return LanSettings(enabled=enabled, address=address, port=port)


def parse_settings(path: Path, raw: Any) -> Settings:
    _expect(path, "(top level)", raw, dict, "a JSON object")
    profiles_raw = raw.get("profiles", {})
    _expect(path, "profiles", profiles_raw, dict, "an object")
    agents_raw = raw.get("agents", {})
    _expect(path, "agents", agents_raw, dict, "an object")
    integrations = raw.get("integrations", {})
    _expect(path, "integrations", integrations, dict, "an object")
    local_api = raw.get("local_agent_api", {})
    _expect(path, "local_agent_api", local_api, dict, "an object")
    for key in ("channels", "tunnels"):
        section = raw.get(key, {})
        _expect(path, key, section, dict, "an object")
        for name, entry in section.items():
            _check_id(path, f"{key}.{name}", name)
            _expect(path, f"{key}.{name}", entry, dict, "an object")
    remote = raw.get("remote", {})
    _expect(path, "remote", remote, dict, "an object")
    remote_port = remote.get("port", 0)
    _expect(path, "remote.port", remote_port, int, "a port number (0 = any free port)")
    if not 0 <= remote_port < 65536:
        raise SettingsError(path, "remote.port", "must be between 0 and 65535")
    max_connections = remote.get("max_connections", 256)
    _expect(path, "remote.max_connections", max_connections, int, "a number of connections")
    if not 1 <= max_connections <= 100_000:
        raise SettingsError(path, "remote.max_connections", "must be between 1 and 100000")
    lan = _parse_lan(path, remote.get("lan", {}))
    host = raw.get("host", {})
    _expect(path, "host", host, dict, "an object")
    on_exit = host.get("on_exit", "keep")
    if on_exit not in HOST_ON_EXIT:
        raise SettingsError(path, "host.on_exit", f"must be one of {', '.join(HOST_ON_EXIT)}")
    workspaces = _str_list(path, "workspaces", raw.get("workspaces", []))
    for i, ws in enumerate(workspaces):
        if not os.path.isabs(ws):
            raise SettingsError(path, f"workspaces[{i}]", "must be an absolute path")
    return Settings(
        path=path,
        raw=raw,
        profiles={pid: _parse_profile(path, pid, d) for pid, d in profiles_raw.items()},
        agents={n: _parse_agent(path, n, d) for n, d in agents_raw.items()},
        workspaces=workspaces,
        mcp_auto_install=_flag(
            path,
            "integrations.mcp_auto_install",
            integrations.get("mcp_auto_install"),
            True,
        ),
        skill_auto_install=_flag(path, "skill_auto_install", raw.get("skill_auto_install"), True),
        local_agent_enabled=_flag(path, "local_agent_api.enabled", local_api.get("enabled"), False),
        local_agent_agents=_str_list(path, "local_agent_api.agents", local_api.get("agents", [])),
        local_agent_idle_seconds=_seconds(path, "local_agent_api.idle_seconds", local_api, 300),
        local_agent_conversation_ttl_seconds=_seconds(
            path, "local_agent_api.conversation_ttl_seconds", local_api, 7200
        ),
        remote_port=remote_port,
        remote_max_connections=max_connections,
        remote_header_timeout_s=_seconds(path, "remote.header_timeout_s", remote, 10),
        remote_lan=lan,
        host_on_exit=on_exit,
        host_resume_on_start=_flag(path, "host.resume_on_start", host.get("resume_on_start"), True),
        fleet=_parse_fleet(path, raw.get("fleet", {})),
    )


def _parse_fleet(path: Path, data: Any) -> FleetSettings:
    """The shape only: what the environment must add (PostgreSQL, Redis, a secret from
    `secret_env`) is checked as the daemon starts, by the fleet app."""
    _expect(path, "fleet", data, dict, "an object")
    machine = data.get("machine", "")
    _expect(path, "fleet.machine", machine, str, "a display name")
    machine = " ".join(machine.split()) or socket.gethostname()
    if len(machine) > 64:
        raise SettingsError(path, "fleet.machine", "must be at most 64 characters")
    secret_env = data.get("secret_env", FleetSettings.secret_env)
    _expect(path, "fleet.secret_env", secret_env, str, "the name of an environment variable")
    if not ENV_NAME.match(secret_env):
        raise SettingsError(path, "fleet.secret_env", f"{secret_env!r} is not a variable name")
    secret = data.get("secret", "")
    _expect(path, "fleet.secret", secret, str, "a string")
    if secret and len(secret) < FLEET_SECRET_MIN:
        # Never the secret itself in the message: it ends up in logs and terminals.
        raise SettingsError(
            path, "fleet.secret", f"must be at least {FLEET_SECRET_MIN} characters long"
        )
    return FleetSettings(
        enabled=_flag(path, "fleet.enabled", data.get("enabled"), False),
        machine=machine,
        secret_env=secret_env,
        secret=secret,
    )


def _seconds(path: Path, key: str, section: dict[str, Any], default: float) -> float:
    value = section.get(key.rsplit(".", 1)[1], default)
    _expect(path, key, value, (int, float), "a number of seconds")
    if isinstance(value, bool) or value <= 0:
        raise SettingsError(path, key, "must be a positive number of seconds")
    return float(value)
