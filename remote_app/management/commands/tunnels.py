"""`manage.py tunnels [--json]`, `manage.py tunnels start|stop NAME`: the daemon's tunnels
(contract §13), with their status, public URL and what is wrong when one fails."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.core.management.base import CommandError

from cli import views
from core.client_command import ListCommand, api


class Command(ListCommand):
    help = "List the tunnels of the running svc daemon; `start NAME` / `stop NAME` change one."
    view = views.TUNNELS

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("action", nargs="?", choices=("start", "stop"))
        parser.add_argument("name", nargs="?", help="a tunnel named in settings.json")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["action"]:
            super().handle(*args, **options)
            return
        if not options["name"]:
            raise CommandError(
                f"name the tunnel to {options['action']}: tunnels {options['action']} NAME"
            )
        row = api("POST", f"tunnels/{quote(options['name'], safe='')}/{options['action']}")
        if options["json"]:
            self.stdout.write(views.json_text(row))
            return
        self.stdout.write(views.table([row], self.columns))
