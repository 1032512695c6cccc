"""bin/svc url: the login URL again, for a browser that lost it (docs/service.md)."""

from typing import Any

from cli import port_owner
from core import config
from core.browser import login_url
from core.client_command import SvcCommand


class Command(SvcCommand):
    help = "Print the URL that logs a browser in to the dashboard (it holds the owner token)."

    def handle(self, *args: Any, **options: Any) -> None:
        auth = config.current_auth()
        # Only to this command's stdout, never to a log (docs/security.md): it opens svc.
        self.stdout.write(login_url())
        if port_owner.probe_svc(auth.port) != auth.browser_host:
            self.stderr.write(
                f"svc is not running on port {auth.port} for this SVC_HOME ({config.svc_home()}):"
                " the URL works once it is (`bin/svc run`, `make run`, `bin/svc service install`)."
            )
