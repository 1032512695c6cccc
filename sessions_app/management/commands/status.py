"""`manage.py status [--json]`: is the daemon up, where, and what it hosts. `bin/svc status`
prints the same through cli without loading Django."""

from __future__ import annotations

from typing import Any

from cli import views
from core.client_command import ClientCommand, api, base_url


class Command(ClientCommand):
    help = "Show whether the svc daemon is running and what it hosts."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        sessions = api("GET", "sessions")  # raises "svc is not running at …" when down
        agents = api("GET", "agents")
        integrations = api("GET", "integrations")
        daemon = api("GET", "status")
        status = views.status_report(base_url(), sessions, agents, integrations, daemon)
        if options["json"]:
            self.stdout.write(views.json_text(status))
            return
        for line in views.status_lines(status):
            self.stdout.write(line)
