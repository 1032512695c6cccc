"""`manage.py sessions [--json] [--live]`: the daemon's sessions, newest first."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.management.commands._client import api

COLUMNS = ("id", "agent", "kind", "status", "exit_code", "workspace", "created_at")


class Command(BaseCommand):
    help = "List the sessions of the running svc daemon."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="print the list as JSON")
        parser.add_argument("--live", action="store_true", help="only starting/running sessions")

    def handle(self, *args: Any, **options: Any) -> None:
        sessions = api("GET", "sessions")
        if options["live"]:
            sessions = [s for s in sessions if s["status"] in ("starting", "running")]
        if options["json"]:
            self.stdout.write(json.dumps(sessions, indent=2))
            return
        rows = [[str(s.get(c) if s.get(c) is not None else "") for c in COLUMNS] for s in sessions]
        widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(COLUMNS)]
        for row in [list(COLUMNS), *rows]:
            self.stdout.write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
