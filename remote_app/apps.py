from django.apps import AppConfig


class RemoteAppConfig(AppConfig):
    name = "remote_app"
    verbose_name = "Remote access"
