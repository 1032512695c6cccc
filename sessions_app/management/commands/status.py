"""`manage.py status [--json]`: is the daemon up, where, and what it hosts."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.management.commands._client import api, base_url
from sessions_app.models import Session


class Command(BaseCommand):
    help = "Show whether the svc daemon is running and what it hosts."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        sessions = api("GET", "sessions")  # raises "svc is not running at …" when down
        agents = api("GET", "agents")
        integrations = api("GET", "integrations")
        live = [s for s in sessions if s["status"] in Session.LIVE]
        status = {
            "running": True,
            "url": base_url(),
            "sessions": len(sessions),
            "live_sessions": len(live),
            "agents_enabled": [a["name"] for a in agents if a.get("enabled")],
            "integrations": integrations,
        }
        if options["json"]:
            self.stdout.write(json.dumps(status, indent=2))
            return
        self.stdout.write(f"svc is running at {status['url']}")
        self.stdout.write(f"sessions: {len(live)} live, {len(sessions)} in total")
        self.stdout.write(f"agents enabled: {', '.join(status['agents_enabled']) or '(none)'}")
        self.stdout.write(f"auto-install into agents (MCP entry for {integrations['mcp_url']}):")
        for line in integration_lines(integrations):
            self.stdout.write(line)


def integration_lines(report: dict[str, Any]) -> list[str]:
    """One line per agent and part: its state, file, and why when skipped (contract §9)."""
    lines = []
    for agent in report["agents"]:
        for label in ("mcp", "skills"):
            part = agent[label]
            why = f" — {part['reason']}" if part["reason"] else ""
            lines.append(
                f"  {agent['agent']:<9} {label:<6} {part['state']:<10} {part['path']}{why}"
            )
    return lines
