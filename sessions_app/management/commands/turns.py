"""`manage.py turns [--json] [--cancel TURN [--cleanup]]`: subagent turns, one line per
subagent, with what svc measured in its worktree."""

from __future__ import annotations

import json
from typing import Any

from sessions_app.management.commands._client import ListCommand, api, table


def _changes(changes: dict[str, Any] | None) -> str:
    if not changes or "commits" not in changes:
        return ""
    return (
        f"{changes['commits']} commits, {changes['files_changed']} files "
        f"+{changes['insertions']} -{changes['deletions']}"
    )


class Command(ListCommand):
    help = "List subagent turns and their reports; --cancel stops a turn (--cleanup: worktrees)."
    path = "subagent-turns"
    columns = ("turn", "mode", "turn_status", "name", "agent", "status", "changes", "summary")

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("--cancel", metavar="TURN", help="cancel this turn's subagents")
        parser.add_argument("--cleanup", action="store_true", help="with --cancel: remove its "
                            "worktrees and branches")  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["cancel"]:
            super().handle(*args, **options)
            return
        query = "?cleanup=1" if options["cleanup"] else ""
        turn = api("DELETE", f"subagent-turns/{options['cancel']}{query}")
        if options["json"]:
            self.stdout.write(json.dumps(turn, indent=2))
            return
        self.stdout.write(table(self.rows([turn], options), self.columns))
        for branch in turn.get("removed_branches") or []:
            self.stdout.write(f"removed {branch}")

    def rows(self, items: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
        if options["json"]:
            return items
        return [_row(turn, s) for turn in items for s in turn["subagents"]]


def _row(turn: dict[str, Any], subagent: dict[str, Any]) -> dict[str, Any]:
    return {
        "turn": turn["turn_id"][:8], "mode": turn["mode"], "turn_status": turn["status"],
        "name": subagent["name"], "agent": subagent["agent"], "status": subagent["status"],
        "changes": _changes(subagent["changes"]), "summary": subagent["summary"],
    }  # fmt: skip
