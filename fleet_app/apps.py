from typing import Any

from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate

from core import live
from fleet_app import conf, schemas


def _migrate_the_fleet_schema(sender: AppConfig, using: str, **kwargs: Any) -> None:
    """`manage.py migrate` migrates the shared schema too, right after this member's own."""
    if using == "default":
        schemas.migrate_shared(verbosity=kwargs.get("verbosity", 1))


class FleetAppConfig(AppConfig):
    name = "fleet_app"
    verbose_name = "Fleet"

    def ready(self) -> None:
        from fleet_app import selectors  # imports models: Django loads them after this module

        live.register("machines", lambda _: selectors.machine_list_dicts())
        if conf.member_config() is not None:
            connection_created.connect(schemas.create_on_connect, dispatch_uid="fleet_app.schema")
            post_migrate.connect(
                _migrate_the_fleet_schema, sender=self, dispatch_uid="fleet_app.migrate"
            )
