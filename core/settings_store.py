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
    """settings.json as the API shows it: every profile's literal key and every header value
    (they often carry credentials) replaced by a marker."""
    shown = copy.deepcopy(config.current_settings().raw)
    for profile in (shown.get("profiles") or {}).values():
        if not isinstance(profile, dict):
            continue
        if profile.get("api_key"):
            profile["api_key"] = REDACTED
        if isinstance(profile.get("headers"), dict):
            profile["headers"] = {name: REDACTED for name in profile["headers"]}
    for channel in (shown.get("channels") or {}).values():
        if isinstance(channel, dict):  # literal chat tokens (contract §14)
            for key in _CHANNEL_SECRETS:
                if channel.get(key):
                    channel[key] = REDACTED
    notifications = shown.get("notifications")
    if isinstance(notifications, dict) and isinstance(notifications.get("urls"), list):
        # Apprise URLs carry their service's credentials (tgram://token/…, pover://user@key).
        notifications["urls"] = [_url_redacted(u) for u in notifications["urls"]]
    fleet = shown.get("fleet")
    if isinstance(fleet, dict) and fleet.get("secret"):  # contract §18: it opens every member
        fleet["secret"] = REDACTED
    return shown


_CHANNEL_SECRETS = ("bot_token", "app_token")


def _unredacted(url: object, stored: list, index: int) -> object:
    kept = stored[index] if index < len(stored) else None
    return kept if isinstance(url, str) and url == _url_redacted(kept) else url


def _url_redacted(url: object) -> object:
    if not isinstance(url, str) or "://" not in url:
        return url
    return url.split("://", 1)[0] + "://" + REDACTED


def _keep_secrets(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """A client that read redacted settings and writes them back must not erase the secrets."""
    old_profiles = old.get("profiles") or {}
    for pid, profile in (new.get("profiles") or {}).items():
        if not isinstance(profile, dict):
            continue
        stored = old_profiles.get(pid) if isinstance(old_profiles.get(pid), dict) else {}
        if profile.get("api_key") == REDACTED:
            profile["api_key"] = stored.get("api_key", "")
        headers, stored_headers = profile.get("headers"), stored.get("headers") or {}
        if isinstance(headers, dict):
            for name, value in headers.items():
                if value == REDACTED and isinstance(stored_headers, dict):
                    headers[name] = stored_headers.get(name, "")
    old_channels = old.get("channels") or {}
    for name, channel in (new.get("channels") or {}).items():
        stored = old_channels.get(name) if isinstance(old_channels.get(name), dict) else {}
        if isinstance(channel, dict):
            for key in _CHANNEL_SECRETS:
                if channel.get(key) == REDACTED:
                    channel[key] = stored.get(key, "")
    new_urls = (new.get("notifications") or {}).get("urls")
    old_urls = (old.get("notifications") or {}).get("urls") or []
    if isinstance(new_urls, list):  # a redacted URL written back keeps the stored one there
        new["notifications"]["urls"] = [_unredacted(u, old_urls, i) for i, u in enumerate(new_urls)]
    new_fleet, old_fleet = new.get("fleet"), old.get("fleet")
    if isinstance(new_fleet, dict) and new_fleet.get("secret") == REDACTED:
        new_fleet["secret"] = old_fleet.get("secret", "") if isinstance(old_fleet, dict) else ""
    return new


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
