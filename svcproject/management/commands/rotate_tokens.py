"""manage.py rotate_tokens: new owner and MCP tokens; the old ones stop working at once."""

from typing import Any

from core import config, rotation
from core.client_command import SvcCommand


class Command(SvcCommand):
    help = "Replace both svc tokens in $SVC_HOME/auth.json (a running daemon picks them up)."

    def handle(self, *args: Any, **options: Any) -> None:
        rotation.tokens_rotate()
        # The new values stay in auth.json (0600): printing them would put them in shell logs.
        self.stdout.write(f"Rotated the owner and MCP tokens in {config.auth_path()}.")
