from django.apps import AppConfig


class ChannelsAppConfig(AppConfig):
    name = "channels_app"
    label = "channels_app"
    verbose_name = "Chat channels"
