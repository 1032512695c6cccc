"""`manage.py pickup CODE`: take over the session an agent handed over, then attach to it."""

from __future__ import annotations

from typing import Any

from core import browser
from core.client_command import ClientCommand, api
from sessions_app.management.commands.attach import attach_terminal, finish


class Command(ClientCommand):
    help = "Pick up a handed-over session by its 4-character code, then attach to it."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("code")

    def handle(self, *args: Any, **options: Any) -> None:
        session = api("POST", "handover/pickup", json={"code": options["code"]})
        self.stdout.write(f"picked up {session['agent']} session {session['id']}")
        if session["kind"] == "terminal":
            finish(self, attach_terminal(session))
            return
        # The command line has no chat client: the dashboard shows the conversation.
        self.stdout.write(
            f"open it in the dashboard: {browser.browser_base()}/#session={session['id']}"
        )
