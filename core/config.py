"""The one place that reads svc's files: $SVC_HOME, settings.json and auth.json.

Everything else receives typed objects from here. settings.json is the user's file: it is validated
strictly (a bad file stops start-up with file, key and reason), written back atomically, and keys
svc does not know are carried through every write untouched. A file broken while svc runs is
reported (settings_error) and never written over; every write keeps the file before it as
settings.json.bak (core.settings_disk).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from cli.home import (
    AUTH_MODE,
    DEFAULT_PORT,
    PRIVATE,
    auth_usable_as_is,
    home_setting,
    is_browser_host,
    is_port,
    is_token,
)
from core import secret_env
from core.settings_disk import (
    atomic_write,
    error_report,
    read_settings_file,
    refusal,
    replace_settings_file,
    scrub_backup,
)
from core.settings_schema import (  # noqa: F401 (the typed settings, re-exported)
    ID_PATTERN,
    AgentSpec,
    Profile,
    Settings,
    SettingsError,
    parse_settings,
)

logger = logging.getLogger(__name__)


def svc_home() -> Path:
    # The fast command-line client (cli) finds the home by the same rule.
    return _home_for(home_setting())


@functools.cache
def _home_for(value: str) -> Path:
    # Created once per path: this sits on hot paths (every settings read), mkdir is a syscall.
    home = Path(value).expanduser()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "logs").mkdir(mode=0o700, exist_ok=True)
    # Logs, the database and settings may hold private data: only the user may enter.
    for folder in (home, home / "logs"):
        if folder.stat().st_mode & PRIVATE and folder.stat().st_uid == os.getuid():
            folder.chmod(0o700)
    return home


# --- the environment: every SVC_* knob of the daemon, read here and nowhere else -------------


@dataclass(frozen=True)
class Knobs:
    """What the daemon's environment says. Names and defaults are documented in the README."""

    debug: bool
    log_level: str
    print_login: bool
    redis_url: str
    redis_prefix: str
    database_url: str
    permission_timeout_s: float
    md_render_seconds: float
    bridge_read_timeout_s: float
    bridge_max_retries: int
    browser_idle_seconds: int
    agent_start_timeout_s: float
    subagent_progress_s: float
    # Hosted processes held by a holder that outlives svc (contract §17); 0 makes them svc's own
    # children again (they end with it): the baseline `make bench` measures the holder against.
    holder: bool = True


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    try:
        return float(raw) if raw else default
    except ValueError as exc:
        raise ImproperlyConfigured(f"${name}: must be a number, got {raw!r}") from exc


def knobs() -> Knobs:
    env = os.environ.get
    return Knobs(
        debug=env("SVC_DEBUG") == "1",
        log_level=env("SVC_LOG_LEVEL", "INFO"),
        print_login=env("SVC_PRINT_LOGIN") == "1",
        redis_url=secret_env.get("SVC_REDIS_URL"),  # held out of the environment (daemon)
        redis_prefix=env("SVC_REDIS_PREFIX", "svc"),
        database_url=secret_env.get("DATABASE_URL"),
        permission_timeout_s=_env_number("SVC_PERMISSION_TIMEOUT", 60.0),
        md_render_seconds=_env_number("SVC_MD_RENDER_SECONDS", 10.0),
        bridge_read_timeout_s=_env_number("SVC_BRIDGE_READ_TIMEOUT", 600.0),
        bridge_max_retries=int(_env_number("SVC_BRIDGE_MAX_RETRIES", 2)),
        browser_idle_seconds=int(_env_number("SVC_BROWSER_IDLE_SECONDS", 8 * 3600)),
        agent_start_timeout_s=_env_number("SVC_AGENT_START_TIMEOUT", 60.0),
        # MCP clients give up after 60–300 s of silence; contract §4: one every 15 s at least.
        subagent_progress_s=min(_env_number("SVC_SUBAGENT_PROGRESS_S", 10.0), 15.0),
        holder=env("SVC_HOLDER", "1") != "0",
    )


_listening_port: int | None = None


def svc_port() -> int:
    """The port svc listens on: the one the daemon bound (see declare_listening_port); in other
    processes (the CLI), what the daemon wrote to auth.json."""
    return _listening_port or current_auth().port


def _initial_port() -> int:
    """For an auth.json written before any daemon has bound: $SVC_PORT, else 8000."""
    return int(os.environ.get("SVC_PORT") or DEFAULT_PORT)


def declare_listening_port(port: int) -> None:
    """Called by the daemon once its socket is bound: every URL svc hands out uses this port."""
    global _listening_port
    _listening_port = port
    auth = current_auth()
    if auth.port != port:
        with _auth_lock:
            _write_auth(dataclasses.replace(auth, port=port))


def declare_remote_port(port: int) -> None:
    """Called by the daemon once the remote listener is bound (0: it is not)."""
    auth = current_auth()
    if auth.remote_port != port:
        with _auth_lock:
            _write_auth(dataclasses.replace(auth, remote_port=port))


# --- settings.json ---------------------------------------------------------------------------


def settings_path() -> Path:
    return svc_home() / "settings.json"


class _SettingsCache:
    """Re-reads settings.json when its mtime (or path) changes; one parse per change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[str, int] | None = None
        self._value: Settings | None = None
        self._checked = 0.0  # monotonic time of the last stat, for recent()
        # Why the file on disk is not the settings in force, while it is not.
        self.error: SettingsError | None = None

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
                    read = read_settings_file(path)
                    self._value = dataclasses.replace(read, loaded_mtime_ns=mtime)
                    self.error = None
                    if mtime != -1:  # a file deleted (by accident?) leaves the backup whole
                        scrub_backup(path, read.raw)
                except SettingsError as exc:
                    if self._value is None or self._value.path != path:
                        raise
                    # A running daemon keeps its last good settings rather than stopping.
                    logger.error("ignoring invalid settings, keeping the last good ones: %s", exc)
                    self.error = exc
                self._key = key
            return self._value

    def recent(self, max_age_s: float) -> Settings:
        """get(), but the file is looked at no more than once per `max_age_s`: each look stats
        and mkdirs $SVC_HOME (~120 µs), a third of the bridge's own time per request."""
        now = time.monotonic()
        if self._value is None or now - self._checked > max_age_s:
            self._checked = now
            return self.get()
        return self._value

    def written(self, path: Path, settings: Settings) -> None:
        """svc wrote `settings` to `path`: they are the good copy now, even if the file is broken
        by hand before anything reads it again."""
        with self._lock:
            mtime = path.stat().st_mtime_ns
            self._value = dataclasses.replace(settings, loaded_mtime_ns=mtime)
            self._key, self.error = (str(path), mtime), None

    def clear(self) -> None:
        with self._lock:
            self._key = self._value = None


_settings_cache = _SettingsCache()


def current_settings() -> Settings:
    return _settings_cache.get()


def settings_problem() -> str:
    """Why settings.json as it is on disk is not in force ("" when it is): the dashboard shows it
    until the file is fixed."""
    error = settings_error()
    return error["message"] if error else ""


def settings_error() -> dict[str, Any] | None:
    """settings_problem() with where it is: {message, path, key, line, column} (line and column
    when the text is not JSON), or None while the file on disk is in force."""
    try:
        current_settings()
    except SettingsError as exc:  # no good copy yet: nothing is in force
        return error_report(exc)
    error = _settings_cache.error
    return error_report(error) if error else None


def recent_settings(max_age_s: float = 1.0) -> Settings:
    """current_settings() as of at most `max_age_s` ago: for hot paths (the bridge)."""
    return _settings_cache.recent(max_age_s)


# One writer of settings.json at a time, across the threads that write it (the API's, the
# settings watcher's mirror, core.settings_store): the file on disk is checked and replaced as one.
SETTINGS_LOCK = threading.RLock()


def write_settings(raw: dict[str, Any]) -> Settings:
    """Validate, then atomically replace settings.json; unknown keys in `raw` are kept. Refused
    (409 `settings_invalid`) while the file on disk cannot be read; the file replaced is kept as
    settings.json.bak."""
    path = settings_path()
    text = json.dumps(raw, indent=2) + "\n"
    parsed = parse_settings(path, json.loads(text))  # what is in the file, not the caller's dict
    with SETTINGS_LOCK:
        replace_settings_file(path, text)
        _settings_cache.written(path, parsed)
    return parsed


def update_settings(changes: dict[str, Any]) -> Settings:
    """Merge top-level `changes` into the current file, keeping every key not named."""
    with SETTINGS_LOCK:
        try:
            raw = dict(current_settings().raw)
        except SettingsError as exc:  # broken, and no good copy to start from
            raise refusal(exc) from exc
        raw.update(changes)
        return write_settings(raw)


# --- auth.json -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Auth:
    port: int
    owner_token: str = field(repr=False)
    mcp_token: str = field(repr=False)
    # The dashboard's own host name, `svc-<random>.localhost` (contract §2): browsers send a host's
    # cookies to every port of that host, so the name must be one no other page can guess.
    browser_host: str = ""
    # The remote listener's port (contract §13), written when the daemon binds it; 0 = none.
    remote_port: int = 0


def _new_token() -> str:
    return secrets.token_hex(32)


def _new_browser_host() -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    return "svc-" + "".join(secrets.choice(alphabet) for _ in range(12)) + ".localhost"


def auth_path() -> Path:
    return svc_home() / "auth.json"


def _write_auth(auth: Auth) -> None:
    data = {
        "port": auth.port,
        "owner_token": auth.owner_token,
        "mcp_token": auth.mcp_token,
        "browser_host": auth.browser_host,
        "remote_port": auth.remote_port,
    }
    atomic_write(auth_path(), json.dumps(data, indent=2) + "\n", mode=AUTH_MODE)


_auth_lock = threading.RLock()  # rotate_tokens reads the current auth while holding it


def load_auth() -> Auth:
    """auth.json, created on first use. Its port is only ever changed by the daemon that binds
    (declare_listening_port): a CLI command reading it must not move it."""
    with _auth_lock:
        path = auth_path()
        data: dict[str, Any] = {}
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise SettingsError(path, "(file)", f"not valid JSON: {exc}") from exc
        # The rules are cli.home's: the fast client uses the file only when this
        # function would keep it as it is.
        owner, mcp, port = data.get("owner_token"), data.get("mcp_token"), data.get("port")
        host = data.get("browser_host")
        if not is_port(port):
            port = _listening_port or _initial_port()
        if not (is_token(owner) and is_token(mcp)):
            owner, mcp = _new_token(), _new_token()
        remote = data.get("remote_port")
        auth = Auth(
            port,
            owner,
            mcp,
            host if is_browser_host(host) else _new_browser_host(),
            remote if is_port(remote, lowest=0) else 0,
        )
        if not auth_usable_as_is(data) or (path.stat().st_mode & 0o777) != AUTH_MODE:
            _write_auth(auth)
        return auth


def rotate_tokens() -> Auth:
    with _auth_lock:
        # A new dashboard host too: a browser session on the old one can never come back.
        now = current_auth()
        auth = Auth(now.port, _new_token(), _new_token(), _new_browser_host(), now.remote_port)
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
