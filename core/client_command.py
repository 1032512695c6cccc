"""How the command-line client reaches the running daemon: its port and owner token from
$SVC_HOME/auth.json, over /api/ and /ws like the dashboard. The requests and what the commands
print are cli's, which `bin/svc` also runs without Django for the common commands."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, SystemCheckError

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


class SvcCommand(BaseCommand):
    """Every svc command (`bin/svc …`): an error is its message alone on stderr, exit status 1 —
    the same line cli prints without Django. Django's own form, "CommandError: svc is not
    running …", reads like a crash's traceback (issue 43). `--traceback` keeps Django's way."""

    _from_argv = False  # only a command line prints and exits; call_command() gets the error

    def run_from_argv(self, argv: list[str]) -> None:
        self._from_argv = True
        super().run_from_argv(argv)

    def execute(self, *args: Any, **options: Any) -> Any:
        try:
            return super().execute(*args, **options)
        except CommandError as exc:
            if not self._from_argv or options.get("traceback") or isinstance(exc, SystemCheckError):
                raise
            self.stderr.write(str(exc))  # Django's ERROR style on a terminal, as before
            sys.exit(exc.returncode)


class ClientCommand(SvcCommand):
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
