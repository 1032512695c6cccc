"""How the command-line client reaches the running daemon: its port and owner token from
$SVC_HOME/auth.json, over /api/ and /ws like the dashboard. The requests and what the commands
print are cli's, which `bin/svc` also runs without Django for the common commands."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from cli import api as cli_api
from cli.home import Daemon
from cli.views import ListView, listing, table  # noqa: F401 (table: for commands)
from core import config


def daemon() -> Daemon:
    auth = config.current_auth()
    return Daemon(auth.port, auth.owner_token)


def base_url() -> str:
    return daemon().url


def headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {config.current_auth().owner_token}"}


def api(method: str, path: str, json: Any = None) -> Any:
    try:
        return cli_api.call(daemon(), method, path, json)
    except cli_api.ClientError as exc:
        raise CommandError(str(exc)) from exc


class ClientCommand(BaseCommand):
    """A command that only talks to the running daemon. Django's system checks (URLconf, views,
    models: about half of such a command's CPU) check this process's configuration, which the
    daemon checked when it started; the client has nothing of its own for them to check."""

    requires_system_checks: list[str] = []


class ListCommand(ClientCommand):
    """A command that prints one /api/ list: a table, or the JSON itself with --json. `view`: the
    list as cli.views defines it for both client paths; a command without one sets
    `path` and `columns` itself."""

    view: ListView | None = None
    path: str
    columns: tuple[str, ...]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.view is not None:
            self.path, self.columns = self.view.path, self.view.columns

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="print the list as JSON")

    def rows(self, items: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
        return self.view.rows(items, options) if self.view is not None else items

    def handle(self, *args: Any, **options: Any) -> None:
        items = api("GET", self.path)
        if self.view is not None:  # the same text as the fast client (optional columns too)
            self.stdout.write(self.view.render(items, options))
            return
        self.stdout.write(listing(self.rows(items, options), self.columns, options["json"]))
