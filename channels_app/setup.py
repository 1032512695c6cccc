"""Setting a channel up from the dashboard (contract §14, issue 34 "Chat apps from the
dashboard"): a pasted token is checked with the platform (Telegram `getMe`; Slack `auth.test` for
the bot token and `apps.connections.open` for the app token), stored in $SVC_HOME/secrets.json
(channels_app/secret_store.py) and named from settings.json; a sender who wrote while not allowed
is added to the allow-list. Tokens are never returned nor logged: errors name the setting, never
the value."""

from __future__ import annotations

import copy
import os
import re
from typing import Any

from asgiref.sync import async_to_sync

from channels_app import reach, secret_store
from channels_app.config import ChannelError, parse
from core import config, settings_store
from core.errors import DomainError

NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
KINDS = ("telegram", "slack")
TOKENS = {"telegram": ("bot_token",), "slack": ("bot_token", "app_token")}
PLAIN = ("api_base", "agent", "workspace", "profile_id", "notify_chat")
DEFAULT_BASE = {"telegram": "https://api.telegram.org", "slack": "https://slack.com/api/"}


def _scrub(text: str, *secrets: str) -> str:
    for value in secrets:
        if value:
            text = text.replace(value, "<token>")
    return text


async def _check_telegram(token: str, api_base: str) -> dict[str, Any]:
    # Through python-telegram-bot, as the channel itself connects: getMe with the same roots.
    from telegram import Bot  # the platform's library loads when a setup checks its token
    from telegram.error import InvalidToken, NetworkError, TelegramError

    base = (api_base or DEFAULT_BASE["telegram"]).rstrip("/")
    try:
        bot = Bot(token, base_url=f"{base}/bot", base_file_url=f"{base}/file/bot")
        async with bot:
            return {"ok": True, "bot_username": bot.username, "bot_name": bot.first_name}
    except InvalidToken as exc:
        raise DomainError(
            "Telegram refused this token: copy it again from @BotFather (/mybots → API Token)",
            code="token_refused",
        ) from exc
    except NetworkError as exc:
        said = reach.unreachable("telegram", base, exc, "", token)
        raise DomainError(said, code="unreachable") from exc
    except TelegramError as exc:
        raise DomainError(f"the Bot API at {base} answered: {_scrub(str(exc), token)}") from exc


async def _check_slack(bot_token: str, app_token: str, api_base: str) -> dict[str, Any]:
    # The platform's library (~0.3 s to import) loads when a setup checks a Slack token.
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.async_client import AsyncWebClient

    base = api_base or DEFAULT_BASE["slack"]
    which = "bot token (xoxb-…)"
    try:
        who = await AsyncWebClient(token=bot_token, base_url=base).auth_test()
        which = "app token (xapp-…, with connections:write)"
        # slack-sdk sends the app token it is given here (never the client's) as the bearer.
        await AsyncWebClient(base_url=base).apps_connections_open(app_token=app_token)
    except SlackApiError as exc:
        error = str(exc.response.get("error") or "refused") if exc.response else "refused"
        raise DomainError(f"Slack refused the {which}: {error}", code="token_refused") from exc
    except Exception as exc:  # aiohttp's and the OS's: Slack not reachable
        said = reach.unreachable("slack", base, exc, "", bot_token, app_token)
        raise DomainError(said, code="unreachable") from exc
    return {
        "ok": True,
        "bot_username": str(who.get("user") or ""),
        "bot_name": str(who.get("user") or ""),
        "team": str(who.get("team") or ""),
    }


def _from_env(var: Any, setting: str) -> str:
    value = os.environ.get(str(var), "").strip()
    if not value:
        raise DomainError(f"{setting}: ${var} is not set in svc's environment")
    return value


def _given(body: dict[str, Any], key: str, required: bool) -> str:
    """A token the request gives, literally or by env var name; "" when it gives none."""
    if isinstance(body.get(key), str) and body[key].strip():
        return body[key].strip()
    if body.get(f"{key}_env"):
        return _from_env(body[f"{key}_env"], f"{key}_env")
    if required:
        raise DomainError(f"{key}: paste the token (or name the env var holding it)")
    return ""


def check(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """Whether the platform takes these tokens, and who the bot is."""
    if kind not in KINDS:
        raise DomainError(f"kind must be telegram or slack, got {kind!r}", status=404)
    if not isinstance(body, dict):
        raise DomainError("the body must be a JSON object")
    api_base = str(body.get("api_base") or "")
    if kind == "telegram":
        token = _given(
            {**body, "bot_token": body.get("bot_token") or body.get("token")}, "bot_token", True
        )
        return async_to_sync(_check_telegram)(token, api_base)
    bot = _given(body, "bot_token", True)
    return async_to_sync(_check_slack)(bot, _given(body, "app_token", True), api_base)


def _channels_in_force() -> dict[str, Any]:
    try:
        raw = config.current_settings().raw
    except config.SettingsError as exc:  # never write over a file svc cannot read
        raise config.refusal(exc) from exc
    return copy.deepcopy(raw.get("channels") or {})


def _entry_tokens(name: str, kind: str, entry: dict[str, Any]) -> dict[str, str]:
    """The tokens a saved entry resolves to (for the check of a save that changes no token)."""
    try:
        parsed = parse(name, {**entry, "kind": kind})
    except ChannelError as exc:
        raise DomainError(str(exc)) from exc
    return {"bot_token": parsed.token, "app_token": parsed.app_token}


def save(name: str, body: Any) -> dict[str, Any]:
    """Create or change channel `name`: tokens checked first, then stored (secrets.json, or the
    env var named), then the entry written into settings.json with every other key kept."""
    if not NAME.fullmatch(name) or name == "web":
        raise DomainError("a channel's name is 1-32 of a-z, 0-9, - and _ (and not web)")
    if not isinstance(body, dict):
        raise DomainError("the body must be a JSON object")
    channels = _channels_in_force()
    entry = dict(channels.get(name) or {})
    kind = str(body.get("kind") or entry.get("kind") or name)
    if kind not in KINDS:
        raise DomainError(f"kind must be telegram or slack, got {kind!r}")
    entry["kind"] = kind
    for key in PLAIN:
        if key in body:
            value = body[key]
            if value in ("", None):
                entry.pop(key, None)
            elif isinstance(value, (str, int)):
                entry[key] = str(value)
            else:
                raise DomainError(f"{key}: must be a string")
    if "enabled" in body:
        entry["enabled"] = bool(body["enabled"])
    new_secrets: dict[str, str] = {}
    for key in TOKENS[kind]:
        literal = body.get(key)
        if isinstance(literal, str) and literal.strip():
            new_secrets[secret_store.key_for(name, key)] = literal.strip()
            entry[f"{key}_secret"] = secret_store.key_for(name, key)
            entry.pop(key, None)
            entry.pop(f"{key}_env", None)
        elif body.get(f"{key}_env"):
            entry[f"{key}_env"] = str(body[f"{key}_env"])
            entry.pop(key, None)
            entry.pop(f"{key}_secret", None)
    tokens = {
        key: new_secrets.get(secret_store.key_for(name, key))
        or (_from_env(entry[f"{key}_env"], f"{key}_env") if entry.get(f"{key}_env") else "")
        for key in TOKENS[kind]
    }
    if not all(tokens.values()):
        stored = _entry_tokens(name, kind, entry) if not new_secrets else {}
        tokens = {k: v or stored.get(k, "") for k, v in tokens.items()}
    missing = [k for k in TOKENS[kind] if not tokens.get(k)]
    if missing:
        raise DomainError(f"{missing[0]}: paste the token (or name the env var holding it)")
    api_base = str(entry.get("api_base") or "")
    if kind == "telegram":
        checked = async_to_sync(_check_telegram)(tokens["bot_token"], api_base)
    else:
        checked = async_to_sync(_check_slack)(tokens["bot_token"], tokens["app_token"], api_base)
    if new_secrets:
        secret_store.store(new_secrets)
    channels[name] = entry
    settings_store.settings_update(changes={"channels": channels})
    return {"name": name, "channel": redacted(entry), "check": checked}


def redacted(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as the API shows it: never a token (a literal one is replaced by a marker)."""
    return {
        k: (settings_store.REDACTED if k in ("bot_token", "app_token") else v)
        for k, v in entry.items()
    }


def allow(name: str, user: Any) -> dict[str, Any]:
    """Add `user` to channel `name`'s allow-list (unknown keys kept); the channel restarts with
    it when svc applies the changed settings.json (within a second, core/watcher.py)."""
    user_id = str(user or "").strip()
    if not user_id or len(user_id) > 64:
        raise DomainError("user: the sender's id, as the Channels view lists it")
    channels = _channels_in_force()
    entry = channels.get(name)
    if not isinstance(entry, dict):
        raise DomainError(f"no channel {name!r} in settings.json", status=404, code="not_found")
    users = list(entry.get("allowed_users") or [])
    if user_id not in {str(u) for u in users}:
        # Telegram's ids are numbers (as docs/channels.md writes them); Slack's are strings.
        users.append(int(user_id) if user_id.isdigit() else user_id)
    entry["allowed_users"] = users
    settings_store.settings_update(changes={"channels": channels})
    return {"name": name, "allowed_users": [str(u) for u in users]}
