"""Where the fleet's tables live (contract §18): fleet_app's models in the shared schema (the
`fleet` alias), everything else in this member's own schema (`default`). Installed only in
fleet mode (svcproject/settings.py); without a fleet there is one database and no router."""

from __future__ import annotations

from typing import Any

from fleet_app.conf import FLEET_ALIAS

APP = "fleet_app"


class FleetRouter:
    def db_for_read(self, model: type, **hints: Any) -> str | None:
        return FLEET_ALIAS if model._meta.app_label == APP else None

    def db_for_write(self, model: type, **hints: Any) -> str | None:
        return FLEET_ALIAS if model._meta.app_label == APP else None

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        # A shared row never points at a member's own row: its schema is not the others'.
        return (obj1._meta.app_label == APP) == (obj2._meta.app_label == APP)

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return (db == FLEET_ALIAS) == (app_label == APP)
