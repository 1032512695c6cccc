from django.apps import AppConfig


class NotificationsAppConfig(AppConfig):
    name = "notifications_app"
    verbose_name = "Notifications"
