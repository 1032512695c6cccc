from typing import Any

from django.apps import AppConfig

from core import live
from core import signals as core_signals


def _mirror(settings: Any, **_: Any) -> None:
    from sessions_app import mirrors  # imports models: Django loads them after this module

    mirrors.agents_sync(settings)
    mirrors.workspaces_sync(settings)


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions"

    def ready(self) -> None:
        from sessions_app import models, selectors  # models load after this module (Django)

        core_signals.settings_mirrored.connect(_mirror, dispatch_uid="sessions_app.mirror")
        live.register(
            "sessions", lambda _: selectors.session_list_dicts(), models=(models.Session,)
        )
        live.register("agents_runtime", selectors.agents_runtime_dicts)
