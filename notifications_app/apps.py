from django.apps import AppConfig

from core import live


class NotificationsAppConfig(AppConfig):
    name = "notifications_app"
    verbose_name = "Notifications"

    def ready(self) -> None:
        """The notifications list; the notifier itself connects to the events it reports while
        it runs (hub.Notifier.start)."""
        # Not at the top: the selectors import models, which Django loads after this module.
        from notifications_app import selectors

        live.register("notifications", lambda _: selectors.notification_list_dicts())
