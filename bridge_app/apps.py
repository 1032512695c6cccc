from django.apps import AppConfig


class BridgeAppConfig(AppConfig):
    name = "bridge_app"
    verbose_name = "Bridge"
