"""bin/svc run: the daemon in the foreground, as `make run` starts it but without make — what the
service unit runs (docs/service.md). In order: a port already in use ends it at once, with one
line and before any banner; the database is migrated, saying so when there is something to
migrate; then daphne, and the login URL (issue 43, friction 7)."""

import errno
import os
import socket
import sys
from typing import Any

from django.core.management import call_command
from django.core.management.base import CommandParser
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from core import config
from core.client_command import SvcCommand
from svcproject import startup

LAUNCHD_LABEL = "local.svc"  # cli/service.py's: launchd names a job's XPC_SERVICE_NAME after it


class Command(SvcCommand):
    help = "Run the svc daemon in the foreground (--port: default the last one, or 8000)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
        parser.add_argument(
            "--port", type=int, default=None, help="port (default: auth.json's, else 8000)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        host: str = options["host"]
        port: int = options["port"] or config.current_auth().port
        if problem := port_problem(host, port):
            sys.stderr.write(startup.listen_failure_line(port, host, problem) + "\n")
            raise SystemExit(1)
        migrate()
        if not under_service_manager():
            # As `make run` always did: the login URL, also when stderr is a pipe or a file (a
            # new home has no browser logged in yet). Never under a service manager: there it
            # would go to the journal (docs/service.md).
            os.environ["SVC_PRINT_LOGIN"] = "1"
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        call_command("runserver", address, use_reloader=False)


def port_problem(host: str, port: int) -> OSError | None:
    """Why daphne would fail to listen on host:port, found before its banner: it binds the
    same way (Twisted sets SO_REUSEADDR, so a port in TIME_WAIT is no problem). The daemon's
    own check at bind (core/listen_failure.py) stays for a port taken in between."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc if exc.errno != errno.EINTR else None
    return None


def migrate() -> None:
    """Migrates, and says so first when there is anything to do: on a new home it is the
    longest silent step of a first start."""

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        what = (
            "setting up the database of a new home"
            if not executor.loader.applied_migrations
            else "migrating the database"
        )
        sys.stderr.write(f"svc: {what} ({len(plan)} migrations)…\n")
        sys.stderr.flush()
    call_command("migrate", interactive=False, verbosity=0)


def under_service_manager() -> bool:
    """Started by systemd (it sets INVOCATION_ID for every unit) or by launchd as svc's agent, or
    told so (`SVC_PRINT_LOGIN=0`, which the unit `bin/svc service install` writes sets)."""
    env = os.environ
    if env.get("SVC_PRINT_LOGIN") == "0":
        return True
    return bool(env.get("INVOCATION_ID")) or env.get("XPC_SERVICE_NAME") == LAUNCHD_LABEL
