from typing import Any

from django.apps import AppConfig

from core import signals
from mcp_app import integrations


def _write_entries(**_: Any) -> None:
    """The agents' MCP entries follow the settings (who is enabled) and the tokens."""
    integrations.integrations_sync()


class McpAppConfig(AppConfig):
    name = "mcp_app"
    verbose_name = "MCP"

    def ready(self) -> None:
        signals.settings_mirrored.connect(_write_entries, dispatch_uid="mcp_app.mirror")
        signals.tokens_rotated.connect(_write_entries, dispatch_uid="mcp_app.tokens")
