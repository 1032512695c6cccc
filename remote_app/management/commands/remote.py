"""`svc remote offers`, `svc remote start PROVIDER [--host H] [--token-env VAR]`, `svc remote stop
NAME [--remove]`: phone access from the command line, as the dashboard's Remote view does it
(docs/remote.md "One click"). `start` waits for the public URL and prints it."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

from django.core.management.base import CommandError

from cli import views
from core.client_command import ClientCommand, api

WAIT_S = 60.0


class Command(ClientCommand):
    help = "Reach svc from your phone: `offers`, `start PROVIDER`, `stop NAME`."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("action", choices=("offers", "start", "stop"))
        parser.add_argument("target", nargs="?", help="a provider (start) or a tunnel (stop)")
        parser.add_argument("--name", help="the tunnel's name in settings.json (start)")
        parser.add_argument("--host", help="ssh: user@host; localtunnel: its server's URL")
        parser.add_argument("--token-env", help="ngrok: the variable holding your authtoken")
        parser.add_argument("--remove", action="store_true", help="stop: take it out too")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        action, target = options["action"], options["target"]
        if action == "offers":
            return self._offers(options["json"])
        if not target:
            raise CommandError(
                f"remote {action} needs a {'provider' if action == 'start' else 'tunnel name'}"
            )
        if action == "stop":
            path = f"tunnels/{quote(target, safe='')}"
            if options["remove"]:
                api("DELETE", path)
                self.stdout.write(f"Removed: {target}")
            else:
                row = api("POST", f"{path}/stop")
                self.stdout.write(f"{row['name']}: {row['status']}")
            return None
        body: dict[str, Any] = {"provider": target}
        if options["name"]:
            body["name"] = options["name"]
        host = options["host"]
        if host:
            if target == "ssh" and "@" in host:
                body["user"], host = host.split("@", 1)
            body["host"] = host
        if options["token_env"]:
            body["authtoken_env"] = options["token_env"]
        row = self._until_up(api("POST", "tunnels", body))
        if options["json"]:
            self.stdout.write(views.json_text(row))
        elif row["public_url"]:
            self.stdout.write(f"{row['name']}: {row['public_url']}")
            self.stdout.write(
                "Open it on your phone, then approve the code it shows: svc pair CODE"
            )
        else:
            raise CommandError(f"{row['name']} is {row['status']}: {row['detail']}")
        return None

    def _offers(self, as_json: bool) -> None:
        offers = api("GET", "tunnels/offers")
        if as_json:
            self.stdout.write(views.json_text(offers))
            return
        for offer in offers:
            needs = (
                f" (needs --{'token-env' if 'token' in offer['needs'] else offer['needs'][0]})"
                if offer["needs"]
                else ""
            )
            said = "ready" + needs if offer["available"] else offer["reason"]
            self.stdout.write(f"{offer['provider']:<12} {said}")

    def _until_up(self, row: dict) -> dict:
        deadline = time.monotonic() + WAIT_S
        while row["status"] not in ("online", "error") and time.monotonic() < deadline:
            time.sleep(0.3)  # polling the daemon's list: the CLI has no socket open
            rows = api("GET", "tunnels")
            row = next((r for r in rows if r["name"] == row["name"]), row)
        return row
