"""`manage.py turns [--json] [--cancel TURN [--cleanup]]`: subagent turns, one line per
subagent, with what svc measured in its worktree."""

from __future__ import annotations

from typing import Any

from cli import views
from core.client_command import ListCommand, api


class Command(ListCommand):
    help = "List subagent turns and their reports; --cancel stops a turn (--cleanup: worktrees)."
    view = views.TURNS

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("--cancel", metavar="TURN", help="cancel this turn's subagents")
        parser.add_argument(
            "--cleanup",
            action="store_true",
            help="with --cancel: remove its worktrees and branches",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["cancel"]:
            super().handle(*args, **options)
            return
        query = "?cleanup=1" if options["cleanup"] else ""
        turn = api("DELETE", f"subagent-turns/{options['cancel']}{query}")
        if options["json"]:
            self.stdout.write(views.json_text(turn))
            return
        self.stdout.write(views.table(self.rows([turn], options), self.columns))
        for branch in turn.get("removed_branches") or []:
            self.stdout.write(f"removed {branch}")
