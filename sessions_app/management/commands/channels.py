"""`manage.py channels [--json]`: the chat channels of the running daemon (contract §14) — the
built-in web dashboard and each Telegram or Slack bot in settings.json, with its status and,
when one is not online, what is wrong. Credentials are never part of these rows."""

from __future__ import annotations

from typing import Any

from sessions_app.management.commands._client import ListCommand


class Command(ListCommand):
    help = "List the chat channels of the running svc daemon (status, bot, chats, what is wrong)."
    path = "channels"
    columns = ("name", "kind", "status", "bot", "chats", "detail")

    def rows(self, items: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
        if options["json"]:
            return items
        # The bot as people write its name in the chat app.
        return [{**i, "bot": f"@{i['bot']}" if i.get("bot") else None} for i in items]
