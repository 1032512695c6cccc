"""`manage.py resume ID`: bring an ended session back to `running` under the same id
(contract §17 "Resume"); ID may be a unique prefix of 4+ characters, as the dashboard shows."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from cli import views
from core.client_command import ClientCommand, api


class Command(ClientCommand):
    help = "Resume an ended session (its id or a unique prefix of 4+ characters)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("session_id")
        parser.add_argument("--json", action="store_true", help="print the session as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        # The daemon resolves the prefix (as for GET /api/sessions/{id}) and says why it cannot.
        session = api("POST", f"sessions/{quote(options['session_id'], safe='')}/resume")
        if options["json"]:
            self.stdout.write(views.json_text(session))
        else:
            self.stdout.write(views.resumed_line(session))
