"""`manage.py sessions [--json] [--live]`: the daemon's sessions, newest first."""

from __future__ import annotations

from typing import Any

from sessions_app.management.commands._client import ListCommand


class Command(ListCommand):
    help = "List the sessions of the running svc daemon."
    path = "sessions"
    columns = ("id", "agent", "kind", "status", "exit_code", "workspace", "created_at")

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("--live", action="store_true", help="only starting/running sessions")

    def rows(self, items: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
        if options["live"]:
            return [s for s in items if s["status"] in ("starting", "running")]
        return items
