"""`manage.py sessions [--json] [--live]`: the daemon's sessions, newest first.
`manage.py sessions --stop-all`: end every live session (contract §17) — in a fleet, every
member's; a member that could not be reached is named on stderr, and the exit code is 1."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from cli import views
from core.client_command import ListCommand, api


class Command(ListCommand):
    help = "List the sessions of the running svc daemon (or, with --stop-all, end every one)."
    view = views.SESSIONS

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("--live", action="store_true", help="only starting/running sessions")
        parser.add_argument(
            "--stop-all",
            action="store_true",
            help="stop every live session (their rows stay, ended as stopped by you)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["stop_all"]:
            super().handle(*args, **options)
            return
        stopped = api("POST", "sessions/stop_all")
        if options["json"]:
            self.stdout.write(views.json_text(stopped))
        else:
            self.stdout.write(views.stopped_line(stopped))
        if missing := views.not_stopped(stopped):  # in a fleet: a member that was not reached
            raise CommandError("not stopped: " + "; ".join(missing))
