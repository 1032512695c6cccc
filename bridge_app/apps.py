from typing import Any

from django.apps import AppConfig

from core import signals


def _mirror(settings: Any, **_: Any) -> None:
    from bridge_app import services  # imports models: Django loads them after this module

    services.profiles_sync(settings)


class BridgeAppConfig(AppConfig):
    name = "bridge_app"
    verbose_name = "Bridge"

    def ready(self) -> None:
        signals.settings_mirrored.connect(_mirror, dispatch_uid="bridge_app.mirror")
