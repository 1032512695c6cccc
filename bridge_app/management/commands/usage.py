"""`manage.py usage [--group-by session|turn|profile|model|day] [--since ISO] [--json]`: what
the bridge's requests used and cost (§16), from the running daemon's /api/usage."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from bridge_app.usage import GROUPS
from core.client_command import ListCommand

KEYS = {"session": "session_id", "turn": "turn_id", "profile": "profile_id"}
TOTALS = (
    "requests",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "cost_usd",
)


class Command(ListCommand):
    help = "Token usage and cost of bridge requests, grouped (default: by profile)."
    path = "usage"

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("--group-by", choices=GROUPS, default="profile")
        parser.add_argument("--since", help="only requests from this ISO date or datetime on")

    def handle(self, *args: Any, **options: Any) -> None:
        group_by = options["group_by"]
        query = {"group_by": group_by, **({"since": options["since"]} if options["since"] else {})}
        self.path = f"usage?{urlencode(query)}"
        self.columns = (KEYS.get(group_by, group_by), *TOTALS)
        super().handle(*args, **options)
