"""A channel's settings (contract §14), read with the setting named in every error: a channel
with a wrong setting is an `error` whose detail says which one and how to fix it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from channels_app import secret_store


class ChannelError(Exception):
    """A channel that cannot run; the message is the `detail` a person reads."""


@dataclass(frozen=True)
class ChannelConfig:
    name: str
    kind: str
    token: str = field(repr=False)
    app_token: str = field(default="", repr=False)
    api_base: str = ""
    allowed_users: frozenset[str] = frozenset()
    agent: str = ""
    workspace: str = ""
    profile_id: str = ""
    notify_chat: str = ""


def _secret(name: str, raw: dict[str, Any], literal: str, env_key: str) -> str:
    """A credential by env var name or by its entry in $SVC_HOME/secrets.json (both keep it out
    of settings.json; the dashboard writes the second), else literal."""
    if raw.get(env_key):
        var = str(raw[env_key])
        value = os.environ.get(var, "").strip()
        if not value:
            raise ChannelError(f"channels.{name}.{env_key}: ${var} is not set in svc's environment")
        return value
    if raw.get(f"{literal}_secret"):
        key = str(raw[f"{literal}_secret"])
        try:
            stored = secret_store.secret(key)
        except ValueError as exc:
            raise ChannelError(f"channels.{name}.{literal}_secret: {exc}") from exc
        if not stored:
            raise ChannelError(
                f"channels.{name}.{literal}_secret: no {key!r} in {secret_store.secrets_path()}: "
                "paste the token again in the dashboard's Channels view"
            )
        return stored
    value = raw.get(literal)
    if not isinstance(value, str) or not value.strip():
        raise ChannelError(f"channels.{name}: set {env_key} (an env var name) or {literal}")
    return value.strip()


def declared(settings: Any) -> dict[str, dict[str, Any]]:
    """settings.json's channels, by name (the built-in `web` is not one)."""
    section = settings.raw.get("channels") or {}
    return {n: e for n, e in section.items() if isinstance(e, dict) and n != "web"}


def parse(name: str, raw: dict[str, Any]) -> ChannelConfig:
    kind = str(raw.get("kind", name))
    if kind not in ("telegram", "slack"):
        raise ChannelError(f"channels.{name}.kind: must be telegram or slack, got {kind!r}")
    users = raw.get("allowed_users", [])
    if not isinstance(users, list):
        raise ChannelError(f"channels.{name}.allowed_users: must be a list of user ids")
    for key in ("agent", "workspace", "profile_id", "notify_chat", "api_base"):
        if key in raw and not isinstance(raw[key], (str, int)):
            raise ChannelError(f"channels.{name}.{key}: must be a string")
    default_base = "https://api.telegram.org" if kind == "telegram" else "https://slack.com/api/"
    return ChannelConfig(
        name=name,
        kind=kind,
        token=_secret(name, raw, "bot_token", "bot_token_env"),
        app_token=_secret(name, raw, "app_token", "app_token_env") if kind == "slack" else "",
        api_base=str(raw.get("api_base") or default_base),
        allowed_users=frozenset(str(u) for u in users),
        agent=str(raw.get("agent", "")),
        workspace=str(raw.get("workspace", "")),
        profile_id=str(raw.get("profile_id", "")),
        notify_chat=str(raw.get("notify_chat", "")),
    )
