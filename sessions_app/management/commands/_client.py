"""How the command-line client reaches the running daemon: its port and owner token from
$SVC_HOME/auth.json, over /api/ and /ws like the dashboard."""

from __future__ import annotations

import json
from typing import Any

import httpx
from django.core.management.base import BaseCommand, CommandError

from svcproject import config


def base_url() -> str:
    return f"http://127.0.0.1:{config.current_auth().port}"


def not_running() -> str:
    """One line: where svc was expected, and how to start it."""
    port = config.current_auth().port
    return (
        f"svc is not running at {base_url()}: start it with `make run` "
        f"(or `python manage.py runserver 127.0.0.1:{port}`)"
    )


def headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {config.current_auth().owner_token}"}


def _error_message(response: httpx.Response) -> str:
    """/api/ errors are {"error": {"message": ...}}; anything else is shown as it came."""
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:300]


def api(method: str, path: str, **kwargs: Any) -> Any:
    try:
        response = httpx.request(
            method, f"{base_url()}/api/{path}", headers=headers(), timeout=30, **kwargs
        )
    except httpx.TransportError as exc:
        raise CommandError(not_running()) from exc
    if response.status_code >= 400:
        detail = _error_message(response)
        raise CommandError(f"{method} /api/{path}: {response.status_code} {detail}")
    return response.json() if response.content else None


class ListCommand(BaseCommand):
    """A command that prints one /api/ list: a table, or the JSON itself with --json."""

    path: str
    columns: tuple[str, ...]

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="print the list as JSON")

    def rows(self, items: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
        return items

    def handle(self, *args: Any, **options: Any) -> None:
        items = self.rows(api("GET", self.path), options)
        if options["json"]:
            self.stdout.write(json.dumps(items, indent=2))
            return
        self.stdout.write(table(items, self.columns))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    return str(value)


def table(items: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    rows = [[_cell(item.get(c)) for c in columns] for item in items]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
             for row in [list(columns), *rows]]  # fmt: skip
    return "\n".join(lines)
