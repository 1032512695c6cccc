"""bin/svc service install|uninstall|status: svc started at login and restarted on failure by a
systemd user unit (Linux) or a launchd agent (macOS) — cli/service.py, docs/service.md."""

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from cli import port_owner, service
from core import config
from core.client_command import SvcCommand

ROOT = Path(__file__).resolve().parents[3]


class Command(SvcCommand):
    help = "Start svc at login and restart it on failure: install, uninstall or status."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("install", "uninstall", "status"))
        parser.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
        parser.add_argument(
            "--port", type=int, default=None, help="port (default: auth.json's, else 8000)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        kind = service.platform_kind()
        venv_python = ROOT / ".venv" / "bin" / "python"
        spec = service.Spec(
            root=ROOT,
            python=venv_python if venv_python.exists() else Path(sys.executable),
            home=config.svc_home(),
            host=options["host"],
            port=options["port"] or config.current_auth().port,
            path_env=os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        )
        action = options["action"]
        try:
            if action != "uninstall":  # which needs none of them
                service.check_values(spec)
        except service.UnsafeValue as exc:
            raise CommandError(f"svc service: {exc}") from exc
        if action == "install":
            taken = port_owner.probe_svc(spec.port) is not None
            installed = service.install(kind, spec, port_taken=taken)
            self.stdout.write("\n".join(installed.lines))
            if installed.not_enabled:
                raise CommandError(
                    f"svc service: the unit is written but nothing was enabled: "
                    f"{installed.not_enabled}"
                )
            return
        if action == "uninstall":
            lines = service.uninstall(kind)
        else:
            path = service.unit_path(kind)
            written = path.read_text(errors="replace") if path.exists() else ""
            address = service.installed_address(kind, written)
            if address is not None and options["port"] is None:
                spec = dataclasses.replace(spec, host=address[0], port=address[1])
            is_installed, lines = service.status(kind, spec)
            self.stdout.write("\n".join(lines))
            if not is_installed:
                raise SystemExit(3)  # as `systemctl status` for a unit it does not know
            return
        self.stdout.write("\n".join(lines))
