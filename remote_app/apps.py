from typing import Any

from django.apps import AppConfig

from core import live, signals


def _mirror(settings: Any, **_: Any) -> None:
    from remote_app import mirrors  # imports models: Django loads them after this module

    mirrors.tunnels_sync(settings)


def _end_devices(**_: Any) -> None:
    """Paired devices were granted under the old owner token: they end with it."""
    from remote_app import pairing  # imports models: Django loads them after this module

    pairing.devices_end_all()


class RemoteAppConfig(AppConfig):
    name = "remote_app"
    verbose_name = "Remote access"

    def ready(self) -> None:
        from remote_app import models, selectors  # models load after this module (Django)

        signals.settings_mirrored.connect(_mirror, dispatch_uid="remote_app.mirror")
        signals.tokens_rotated.connect(_end_devices, dispatch_uid="remote_app.tokens")
        live.register("tunnels", selectors.tunnel_list_dicts, models=(models.Tunnel,))
        live.register("pairings", lambda _: selectors.pairing_list_dicts())
