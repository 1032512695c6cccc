"""bin/svc run: the daemon in the foreground, as `make run` starts it but without make — what the
service unit runs (docs/service.md). The database is migrated first."""

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from core import config


class Command(BaseCommand):
    help = "Run the svc daemon in the foreground (--port: default the last one, or 8000)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
        parser.add_argument(
            "--port", type=int, default=None, help="port (default: auth.json's, else 8000)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        host: str = options["host"]
        port: int = options["port"] or config.current_auth().port
        call_command("migrate", interactive=False, verbosity=0)
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        call_command("runserver", address, use_reloader=False)
