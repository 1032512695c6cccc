from django.apps import AppConfig


class PreviewsAppConfig(AppConfig):
    name = "previews_app"
    verbose_name = "Previews"
