from typing import Any

from django.apps import AppConfig


def _mirror(settings: Any, **_: Any) -> None:
    from bridge_app import services

    services.profiles_sync(settings)


class BridgeAppConfig(AppConfig):
    name = "bridge_app"
    verbose_name = "Bridge"

    def ready(self) -> None:
        from core import signals

        signals.settings_mirrored.connect(_mirror, dispatch_uid="bridge_app.mirror")
