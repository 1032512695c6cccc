from typing import Any

from django.apps import AppConfig

from core import live, signals


def _mirror(settings: Any, **_: Any) -> None:
    from channels_app import mirrors  # imports models: Django loads them after this module

    mirrors.channels_sync(settings)


class ChannelsAppConfig(AppConfig):
    name = "channels_app"
    label = "channels_app"
    verbose_name = "Chat channels"

    def ready(self) -> None:
        from channels_app import models, selectors  # models load after this module (Django)

        signals.settings_mirrored.connect(_mirror, dispatch_uid="channels_app.mirror")
        live.register("channels", selectors.channel_list_dicts, models=(models.Channel,))
