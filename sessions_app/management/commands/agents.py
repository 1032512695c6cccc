"""`manage.py agents [--json]`: the agents svc knows, and whether each is enabled."""

from __future__ import annotations

from cli import views
from core.client_command import ListCommand


class Command(ListCommand):
    help = "List the agents of the running svc daemon (built-in and from settings.json)."
    view = views.AGENTS
