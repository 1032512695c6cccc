from typing import Any

from django.apps import AppConfig


def _mirror(settings: Any, **_: Any) -> None:
    from channels_app import mirrors

    mirrors.channels_sync(settings)


class ChannelsAppConfig(AppConfig):
    name = "channels_app"
    label = "channels_app"
    verbose_name = "Chat channels"

    def ready(self) -> None:
        from channels_app import selectors
        from channels_app.models import Channel
        from core import live, signals

        signals.settings_mirrored.connect(_mirror, dispatch_uid="channels_app.mirror")
        live.register("channels", selectors.channel_list_dicts, models=(Channel,))
