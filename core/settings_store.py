"""The settings store: settings.json edits (secrets redacted and kept) and its mirror into the
database. What each app mirrors or ends is the app's own, connected to
core.signals in its `ready()`."""

from __future__ import annotations

import copy
from typing import Any

from core import config, signals
from core.errors import DomainError

REDACTED = "[redacted]"


def settings_redacted() -> dict[str, Any]:
    """settings.json as every API shows it, on the main port and to paired devices alike
    (contract §1: credentials are never returned by any API): every value that can carry a
    credential replaced by a marker — profiles' literal keys and header values, agents'
    environment values, chat tokens, Apprise URLs (their scheme kept), the fleet secret."""
    shown = copy.deepcopy(config.current_settings().raw)
    for profile in _entries(shown, "profiles"):
        _redact(profile, ("api_key",))
        _redact_values(profile, "headers")
    for agent in _entries(shown, "agents"):  # API keys handed to the agent (`OPENAI_API_KEY`…)
        _redact_values(agent, "env")
    for channel in _entries(shown, "channels"):  # literal chat tokens (contract §14)
        _redact(channel, _CHANNEL_SECRETS)
    notifications = shown.get("notifications")
    if isinstance(notifications, dict) and isinstance(notifications.get("urls"), list):
        # Apprise URLs carry their service's credentials (tgram://token/…, pover://user@key).
        notifications["urls"] = [_url_redacted(u) for u in notifications["urls"]]
    fleet = shown.get("fleet")
    if isinstance(fleet, dict):  # contract §18: it opens every member
        _redact(fleet, ("secret",))
    return shown


# Every platform's literal credentials (contract §14's table): the `*_env` and `*_secret` keys
# beside them only name where a credential is kept.
_CHANNEL_SECRETS = (
    "bot_token",
    "app_token",
    "access_token",
    "password",
    "app_secret",
    "client_secret",
    "secret",
    "verify_token",
)


def _entries(raw: dict[str, Any], section: str) -> list[dict[str, Any]]:
    entries = raw.get(section)
    if not isinstance(entries, dict):
        return []
    return [entry for entry in entries.values() if isinstance(entry, dict)]


def _redact(entry: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        if entry.get(key):
            entry[key] = REDACTED


def _redact_values(entry: dict[str, Any], key: str) -> None:
    if isinstance(entry.get(key), dict):
        entry[key] = {name: REDACTED for name in entry[key]}


def _unredacted(url: object, stored: list, index: int) -> object:
    kept = stored[index] if index < len(stored) else None
    return kept if isinstance(url, str) and url == _url_redacted(kept) else url


def _url_redacted(url: object) -> object:
    if not isinstance(url, str) or "://" not in url:
        return url
    return url.split("://", 1)[0] + "://" + REDACTED


def _keep_secrets(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """A client that read redacted settings and writes them back must not erase the secrets:
    a marker written back keeps the stored value (none stored: an empty one)."""
    for entry, stored in _pairs(new, old, "profiles"):
        _keep(entry, stored, ("api_key",))
        _keep_values(entry, stored, "headers")
    for entry, stored in _pairs(new, old, "agents"):
        _keep_values(entry, stored, "env")
    for entry, stored in _pairs(new, old, "channels"):
        _keep(entry, stored, _CHANNEL_SECRETS)
    new_urls = (new.get("notifications") or {}).get("urls")
    old_urls = (old.get("notifications") or {}).get("urls") or []
    if isinstance(new_urls, list):  # a redacted URL written back keeps the stored one there
        new["notifications"]["urls"] = [_unredacted(u, old_urls, i) for i, u in enumerate(new_urls)]
    new_fleet, old_fleet = new.get("fleet"), old.get("fleet")
    if isinstance(new_fleet, dict):
        _keep(new_fleet, old_fleet if isinstance(old_fleet, dict) else {}, ("secret",))
    return new


def _pairs(new: dict[str, Any], old: dict[str, Any], section: str) -> list[tuple[dict, dict]]:
    """Each entry of `section` written, with the stored entry of the same name ({} if none)."""
    entries, stored = new.get(section), old.get(section)
    if not isinstance(entries, dict):
        return []
    stored = stored if isinstance(stored, dict) else {}
    return [
        (entry, stored[name] if isinstance(stored.get(name), dict) else {})
        for name, entry in entries.items()
        if isinstance(entry, dict)
    ]


def _keep(entry: dict[str, Any], stored: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        if entry.get(key) == REDACTED:
            entry[key] = stored.get(key, "")


def _keep_values(entry: dict[str, Any], stored: dict[str, Any], key: str) -> None:
    values, kept = entry.get(key), stored.get(key)
    if not isinstance(values, dict):
        return
    kept = kept if isinstance(kept, dict) else {}
    for name, value in values.items():
        if value == REDACTED:
            values[name] = kept.get(name, "")


# One writer and one mirror of settings.json at a time, across the threads that do either (the
# API's, the settings watcher's): a mirror that read the file before a write must not land
# after the write's own mirror, and two edits must not both start from the same file. The lock
# is core.config's, which every write of the file takes (its check of the file on disk too).
SETTINGS_LOCK = config.SETTINGS_LOCK


def _in_force() -> dict[str, Any]:
    """The settings an edit starts from. With a broken file and no good copy (nothing in force)
    there is none: the write is refused as a write over a broken file is."""
    try:
        return config.current_settings().raw
    except config.SettingsError as exc:
        raise config.refusal(exc) from exc


def settings_replace(*, raw: Any) -> config.Settings:
    """Replace settings.json (validated; redacted secrets keep their stored value) and mirror it."""
    if not isinstance(raw, dict):
        raise DomainError("settings must be a JSON object")
    with SETTINGS_LOCK:
        config.write_settings(_keep_secrets(copy.deepcopy(raw), _in_force()))
        return settings_sync()


def settings_update(*, changes: Any) -> config.Settings:
    """Replace the named top-level keys, keeping every other key (unknown ones included)."""
    if not isinstance(changes, dict):
        raise DomainError("settings must be a JSON object")
    with SETTINGS_LOCK:
        return settings_replace(raw={**_in_force(), **changes})


def settings_sync() -> config.Settings:
    """Mirror settings.json into the database: each app its own part (profiles, agents,
    workspaces, channels, tunnels, the agents' MCP entries), through `settings_mirrored`."""
    with SETTINGS_LOCK:
        settings = config.current_settings()
        signals.settings_mirrored.send(sender=settings_sync, settings=settings)
        return settings
