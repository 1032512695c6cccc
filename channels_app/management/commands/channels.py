"""`manage.py channels [--json]`: the chat channels of the running daemon (contract §14) — the
built-in web dashboard and each Telegram or Slack bot in settings.json, with its status and,
when one is not online, what is wrong. Credentials are never part of these rows."""

from __future__ import annotations

from cli import views
from core.client_command import ListCommand


class Command(ListCommand):
    help = "List the chat channels of the running svc daemon (status, bot, chats, what is wrong)."
    view = views.CHANNELS
