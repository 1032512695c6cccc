from typing import Any

from django.apps import AppConfig


def _write_entries(**_: Any) -> None:
    """The agents' MCP entries follow the settings (who is enabled) and the tokens."""
    from mcp_app import integrations

    integrations.integrations_sync()


class McpAppConfig(AppConfig):
    name = "mcp_app"
    verbose_name = "MCP"

    def ready(self) -> None:
        from core import signals

        signals.settings_mirrored.connect(_write_entries, dispatch_uid="mcp_app.mirror")
        signals.tokens_rotated.connect(_write_entries, dispatch_uid="mcp_app.tokens")
