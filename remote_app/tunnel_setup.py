"""Tunnels made and removed from the Remote view and `svc remote` (docs/remote.md "One click"):
an entry written under `tunnels` in settings.json through the settings store (unknown keys kept;
refused with 409 `settings_invalid` while the file cannot be read), then started."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from core import config, settings_store
from core.errors import DomainError, NotFound
from remote_app.tunnels import registry
from remote_app.tunnels.base import TunnelError

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# What each offer writes; anything else a person wants is an edit of the entry afterwards.
FIELDS: dict[str, tuple[str, ...]] = {
    "cloudflared": (),
    "localtunnel": ("host",),
    "tailscale": (),
    "ngrok": ("authtoken_env", "domain"),
    "ssh": ("host", "port", "user", "remote_port", "public_url"),
}


class BadTunnel(DomainError):
    status, code = 400, "bad_tunnel"


def _token_file(name: str, token: str) -> str:
    """A pasted ngrok authtoken: a 0600 file in $SVC_HOME/secrets, named in the entry."""
    folder = config.svc_home() / "secrets"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"tunnel-{name}.token"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # O_CREAT's mode applies to a new file only: one left 0644 is made private
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token.strip() + "\n")
    return str(path)


def entry_from(provider: str, name: str, options: dict[str, Any]) -> dict[str, Any]:
    """The settings entry an offer makes, checked the way the tunnel itself will read it."""
    if provider not in FIELDS:
        raise BadTunnel(f"provider: one of {', '.join(FIELDS)}, got {provider!r}")
    if not NAME.match(name):
        raise BadTunnel(f"name: lowercase letters, digits, '-' and '_' (got {name!r})")
    entry: dict[str, Any] = {"provider": provider, "enabled": True}
    for key in FIELDS[provider]:
        value = options.get(key)
        if value not in (None, ""):
            entry[key] = value
    token = options.get("token")
    if provider == "ngrok" and isinstance(token, str) and token.strip():
        entry["authtoken_file"] = _token_file(name, token)
    try:
        registry.build(name, entry)
    except TunnelError as exc:
        raise BadTunnel(str(exc)) from None
    return entry


def tunnel_create(provider: str, options: dict[str, Any]) -> tuple[str, bool]:
    """Write (or reuse) the tunnel and enable it. Returns its name and whether it is new. A
    tunnel of the same name and provider already declared is reused as it is (one click twice
    starts the same tunnel, never a second)."""
    name = str(options.get("name") or provider)
    with settings_store.SETTINGS_LOCK:
        current = config.current_settings().raw if _readable() else {}
        tunnels = dict(current.get("tunnels") or {})
        existing = tunnels.get(name)
        if (
            isinstance(existing, dict)
            and existing.get("provider") == provider
            and not _asks(options)
        ):
            if existing.get("enabled", True) is not False:
                return name, False
            tunnels[name] = {**existing, "enabled": True}
        else:
            if existing is not None and existing.get("provider") != provider:
                raise BadTunnel(f"a tunnel named {name!r} with another provider exists already")
            tunnels[name] = entry_from(provider, name, options)
        settings_store.settings_update(changes={"tunnels": tunnels})
    return name, existing is None


def _asks(options: dict[str, Any]) -> bool:
    return any(options.get(k) not in (None, "") for k in ("host", "token", "user", "domain"))


def _readable() -> bool:
    try:
        config.current_settings()
    except config.SettingsError:
        return False  # settings_update refuses with the file's own problem
    return True


def tunnel_remove(name: str) -> None:
    """Take the tunnel out of settings.json (its pasted token file too)."""
    with settings_store.SETTINGS_LOCK:
        tunnels = dict(config.current_settings().raw.get("tunnels") or {})
        entry = tunnels.pop(name, None)
        if entry is None:
            raise NotFound(f"no tunnel {name!r} in settings.json")
        settings_store.settings_update(changes={"tunnels": tunnels})
    token = entry.get("authtoken_file") if isinstance(entry, dict) else None
    if isinstance(token, str) and Path(token).parent == config.svc_home() / "secrets":
        Path(token).unlink(missing_ok=True)
