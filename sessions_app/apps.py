from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions"

    def ready(self) -> None:
        from functools import partial

        from sessions_app import lists, signals  # noqa: F401  (signals: list broadcasts)
        from sessions_app.host import runtime

        runtime.set_listener(partial(lists.abroadcast, "agents_runtime"))
