"""Fleet mode as the daemon starts (contract §18): whether this process is a member, its machine
id, its schema and the fleet secret; and what fleet mode changes in Django's settings — the two
database aliases and the channel layer's prefix. Read once, at settings import
(svcproject/settings.py): `fleet.enabled` needs a restart, as docs/fleet.md says.

Imported before Django's apps are loaded: nothing here touches a model.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings

from core.settings_schema import FLEET_SECRET_MIN, Settings, SettingsError
from fleet_app.identity import machine_id

FLEET_ALIAS = "fleet"  # the shared schema's database alias
FLEET_SCHEMA = "svc_fleet"
POSTGRESQL = "django.db.backends.postgresql"


@dataclass(frozen=True)
class FleetConfig:
    machine_id: str
    secret: str = field(repr=False)

    @property
    def schema(self) -> str:
        """This member's own schema: every table svc had before the fleet lives there."""
        return f"svc_m_{self.machine_id[:12]}"


def fleet_config(
    settings: Settings, home: Path, *, database: dict[str, Any], redis_url: str
) -> FleetConfig | None:
    """None without a fleet; else the member's config, or the SettingsError that stops start-up
    (`svc: cannot start: …settings.json: fleet.enabled: …`) when the environment lacks what a
    fleet is made of."""
    fleet = settings.fleet
    if not fleet.enabled:
        return None

    def refuse(problem: str) -> SettingsError:
        return SettingsError(settings.path, "fleet.enabled", problem)

    if database.get("ENGINE") != POSTGRESQL:
        raise refuse(
            "a fleet shares one PostgreSQL database: set DATABASE_URL=postgres://… "
            "(the same for every member)"
        )
    if not redis_url:
        raise refuse(
            "a fleet's members talk through Redis: set SVC_REDIS_URL=redis://… (or rediss://…; "
            "the same for every member)"
        )
    secret = fleet.resolved_secret()
    if len(secret) < FLEET_SECRET_MIN:
        where = "is empty" if not secret else f"is shorter than {FLEET_SECRET_MIN} characters"
        raise refuse(
            f"the fleet secret {where}: set fleet.secret, or the environment variable "
            f"${fleet.secret_env} (fleet.secret_env), to the same {FLEET_SECRET_MIN}+ "
            "characters on every member"
        )
    return FleetConfig(machine_id=machine_id(home), secret=secret)


def _in_schema(database: dict[str, Any], schema: str) -> dict[str, Any]:
    db = copy.deepcopy(database)
    options = db.setdefault("OPTIONS", {})
    # libpq's `options`: the search path is set as the connection opens, before any query.
    options["options"] = f"{options.get('options', '')} -c search_path={schema}".strip()
    return db


def databases(default: dict[str, Any], fleet: FleetConfig | None) -> dict[str, Any]:
    """Django's DATABASES: `default` as given without a fleet; in one, `default` in this member's
    schema and `fleet` (the same database) in the shared one."""
    if fleet is None:
        return {"default": default}
    return {
        "default": _in_schema(default, fleet.schema),
        FLEET_ALIAS: _in_schema(default, FLEET_SCHEMA),
    }


def channel_layer_redis(redis_url: str, fleet: FleetConfig | None) -> str:
    """The Redis behind the channel layer ("" for the in-process one). A member's channel
    layer carries only its own live-list notices: what passes between members goes over the
    signed bus. So it stays in the process, where a Redis outage cannot reach it — the member
    serves its own dashboard and sessions as before while the fleet is unreachable."""
    return "" if fleet is not None else redis_url


def member_config() -> FleetConfig | None:
    """This process's fleet config (None: not a member), as the settings decided it."""
    return getattr(django_settings, "FLEET", None)


def schema_of(alias: str) -> str | None:
    """The schema a database alias works in, in fleet mode (None otherwise)."""
    fleet = member_config()
    if fleet is None:
        return None
    return {"default": fleet.schema, FLEET_ALIAS: FLEET_SCHEMA}.get(alias)
