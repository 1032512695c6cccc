"""Chat tokens pasted in the dashboard: `$SVC_HOME/secrets.json`, mode 0600, one flat object of
`"channels.<name>.<bot_token|app_token>": "<token>"`. settings.json then names the entry
(`bot_token_secret`, `app_token_secret`) instead of holding the token, so the file people
edit, copy and paste into issues carries no credential (docs/channels.md, docs/security.md)."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from core import config
from core.settings_disk import atomic_write

SECRETS_MODE = 0o600
_lock = threading.Lock()


def secrets_path() -> Path:
    return config.svc_home() / "secrets.json"


def key_for(channel: str, setting: str) -> str:
    return f"channels.{channel}.{setting}"


def _read() -> dict[str, Any]:
    path = secrets_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read ({exc}): fix or remove it") from exc
    return data if isinstance(data, dict) else {}


def secret(key: str) -> str:
    """The stored value, or "" when there is none."""
    value = _read().get(key)
    return value.strip() if isinstance(value, str) else ""


def store(values: dict[str, str]) -> None:
    """Set these entries, keeping the others; the file is replaced atomically, 0600."""
    with _lock:
        data = _read()
        data.update(values)
        atomic_write(secrets_path(), json.dumps(data, indent=2) + "\n", mode=SECRETS_MODE)


def digest(keys: list[str]) -> str:
    """A fingerprint of these entries' values, so a token replaced under the same key restarts
    the channel that uses it (never the values themselves: this is compared and kept around)."""
    try:
        data = _read()
    except ValueError:
        return "unreadable"
    joined = "\0".join(f"{k}={data.get(k, '')}" for k in keys)
    return hashlib.sha256(joined.encode()).hexdigest()
