"""`manage.py sessions [--json] [--live]`: the daemon's sessions, newest first."""

from __future__ import annotations

from typing import Any

from sessions_app.management.commands._client import ListCommand
from svcproject.cli import views


class Command(ListCommand):
    help = "List the sessions of the running svc daemon."
    view = views.SESSIONS

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("--live", action="store_true", help="only starting/running sessions")
