"""The one place that reads svc's files: $SVC_HOME, settings.json and auth.json.

Everything else receives typed objects from here. settings.json is the user's file: it is validated
strictly (a bad file stops start-up with file, key and reason), written back atomically, and keys
svc does not know are carried through every write untouched.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import secrets
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
PROVIDERS = ("openai-chat", "openai-responses", "anthropic", "gemini")
DEFAULT_PORT = 8000


class SettingsError(ImproperlyConfigured):
    """settings.json cannot be used; the message names the file, the key and the problem."""

    def __init__(self, path: Path, key: str, problem: str) -> None:
        self.path, self.key, self.problem = path, key, problem
        super().__init__(f"{path}: {key}: {problem}")


def svc_home() -> Path:
    return _home_for(os.environ.get("SVC_HOME") or str(Path.home() / ".svc"))


@functools.cache
def _home_for(value: str) -> Path:
    # Created once per path: this sits on hot paths (every settings read), mkdir is a syscall.
    home = Path(value).expanduser()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "logs").mkdir(mode=0o700, exist_ok=True)
    # Logs, the database and settings may hold private data: only the user may enter.
    for folder in (home, home / "logs"):
        if folder.stat().st_mode & 0o077 and folder.stat().st_uid == os.getuid():
            folder.chmod(0o700)
    return home


def svc_port() -> int:
    return int(os.environ.get("SVC_PORT", DEFAULT_PORT))


# --- settings.json ---------------------------------------------------------------------------


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
    )


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
    )


def settings_path() -> Path:
    return svc_home() / "settings.json"


def read_settings_file(path: Path) -> Settings:
    if not path.exists():
        return parse_settings(path, {})
    try:
        raw = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as exc:
        raise SettingsError(path, "(file)", f"not valid JSON: {exc}") from exc
    return parse_settings(path, raw)


class _SettingsCache:
    """Re-reads settings.json when its mtime (or path) changes; one parse per change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[str, int] | None = None
        self._value: Settings | None = None

    def get(self) -> Settings:
        path = settings_path()
        try:
            mtime = path.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = -1
        key = (str(path), mtime)
        with self._lock:
            if self._key != key or self._value is None:
                try:
                    self._value = read_settings_file(path)
                except SettingsError as exc:
                    if self._value is None or self._value.path != path:
                        raise
                    # A running daemon keeps its last good settings rather than stopping.
                    logger.error("ignoring invalid settings, keeping the last good ones: %s", exc)
                self._key = key
            return self._value

    def clear(self) -> None:
        with self._lock:
            self._key = self._value = None


_settings_cache = _SettingsCache()


def current_settings() -> Settings:
    return _settings_cache.get()


def write_settings(raw: dict[str, Any]) -> Settings:
    """Validate, then atomically replace settings.json; unknown keys in `raw` are kept."""
    path = settings_path()
    parsed = parse_settings(path, raw)
    atomic_write(path, json.dumps(raw, indent=2) + "\n", mode=0o600)
    _settings_cache.clear()
    return parsed


def update_settings(changes: dict[str, Any]) -> Settings:
    """Merge top-level `changes` into the current file, keeping every key not named."""
    raw = dict(current_settings().raw)
    raw.update(changes)
    return write_settings(raw)


def atomic_write(path: Path, text: str, mode: int = 0o600) -> None:
    """Temp file in the same folder, fsync, rename, fsync the folder: readers never see half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# --- auth.json -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Auth:
    port: int
    owner_token: str = field(repr=False)
    mcp_token: str = field(repr=False)


def _new_token() -> str:
    return secrets.token_hex(32)


def auth_path() -> Path:
    return svc_home() / "auth.json"


def _write_auth(auth: Auth) -> None:
    data = {"port": auth.port, "owner_token": auth.owner_token, "mcp_token": auth.mcp_token}
    atomic_write(auth_path(), json.dumps(data, indent=2) + "\n", mode=0o600)


_auth_lock = threading.Lock()


def load_auth() -> Auth:
    """auth.json, created on first use; the port follows $SVC_PORT so agents' URLs stay right."""
    with _auth_lock:
        path = auth_path()
        port = svc_port()
        data: dict[str, Any] = {}
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise SettingsError(path, "(file)", f"not valid JSON: {exc}") from exc
        owner, mcp = data.get("owner_token"), data.get("mcp_token")
        valid = all(isinstance(t, str) and len(t) == 64 for t in (owner, mcp))
        auth = Auth(port, owner, mcp) if valid else Auth(port, _new_token(), _new_token())
        if not valid or data.get("port") != port or (path.stat().st_mode & 0o777) != 0o600:
            _write_auth(auth)
        return auth


def rotate_tokens() -> Auth:
    with _auth_lock:
        auth = Auth(svc_port(), _new_token(), _new_token())
        _write_auth(auth)
        return auth


_auth_cache: tuple[int, Auth] | None = None


def current_auth() -> Auth:
    """The tokens in force; re-read when auth.json changes, so a rotation elsewhere takes effect."""
    global _auth_cache
    try:
        mtime = auth_path().stat().st_mtime_ns
    except FileNotFoundError:
        mtime = -1
    if _auth_cache is None or _auth_cache[0] != mtime:
        auth = load_auth()
        _auth_cache = (auth_path().stat().st_mtime_ns, auth)
    return _auth_cache[1]
