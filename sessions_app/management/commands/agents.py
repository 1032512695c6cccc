"""`manage.py agents [--json]`: the agents svc knows, and whether each is enabled."""

from __future__ import annotations

from sessions_app.management.commands._client import ListCommand
from svcproject.cli import views


class Command(ListCommand):
    help = "List the agents of the running svc daemon (built-in and from settings.json)."
    view = views.AGENTS
