"""`manage.py pair CODE`: approve the browser whose pairing page shows CODE (contract §13).
`--invite` prints a link that pairs the browser opening it (once, within 10 minutes), `--list`
shows the paired devices, `--pending` the requests waiting, `--revoke ID` ends a device's access
and `--deny ID` refuses a request."""

from __future__ import annotations

import json
from typing import Any

from core.client_command import ClientCommand, api, table

DEVICES = ("id", "name", "host", "first_seen", "last_seen")  # --json has `device` too
REQUESTS = ("id", "device", "host", "created_at", "expires_at")


class Command(ClientCommand):
    help = (
        "Approve a pairing code shown on a remote browser; --invite, --list, --pending, "
        "--revoke, --deny."
    )

    def add_arguments(self, parser: Any) -> None:
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("code", nargs="?", help="the 6 digits the pairing page shows")
        what.add_argument(
            "--invite", action="store_true", help="print a link that pairs the phone opening it"
        )
        what.add_argument("--list", action="store_true", help="list the paired devices")
        what.add_argument("--pending", action="store_true", help="list the waiting requests")
        what.add_argument("--revoke", metavar="ID", help="end this paired device's access")
        what.add_argument("--deny", metavar="ID", help="refuse this waiting request")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["invite"]:
            self.invite(options)
        elif options["list"]:
            self.show(api("GET", "pairings"), DEVICES, options)
        elif options["pending"]:
            self.show(api("GET", "pairings/pending"), REQUESTS, options)
        elif options["revoke"]:
            api("DELETE", f"pairings/{options['revoke']}")
            self.stdout.write(f"Revoked: {options['revoke']}")
        elif options["deny"]:
            api("POST", f"pairings/requests/{options['deny']}/deny")
            self.stdout.write(f"Denied: {options['deny']}")
        else:
            self.approve(options["code"], options)

    def show(self, items: list[dict[str, Any]], columns: tuple[str, ...], options: Any) -> None:
        if options["json"]:
            self.stdout.write(json.dumps(items, indent=2))
        elif not items:
            self.stdout.write("(none)")
        else:
            self.stdout.write(table(items, columns))

    def approve(self, code: str, options: dict[str, Any]) -> None:
        # A refusal reads e.g. "POST /api/pairings/approve: 403 no pairing request shows that
        # code (wrong, used or expired)", or 429 after too many wrong codes in a minute.
        approved = api("POST", "pairings/approve", json={"code": code.strip()})
        if options["json"]:
            self.stdout.write(json.dumps(approved, indent=2))
            return
        self.stdout.write(f"Paired: {approved.get('device') or 'unknown browser'}")
        self.stdout.write("Its pairing page opens svc within a second or two.")

    def invite(self, options: dict[str, Any]) -> None:
        made = api("POST", "pairings/invites")
        if options["json"]:
            self.stdout.write(json.dumps(made, indent=2))
        elif made.get("url"):
            minutes = int(made["expires_in"]) // 60
            self.stdout.write(made["url"])
            self.stdout.write(f"Open it on the phone within {minutes} minutes; it works once.")
        else:
            self.stderr.write(f"No invite link: {made.get('hint')}")
            raise SystemExit(1)
