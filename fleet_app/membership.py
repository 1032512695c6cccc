"""This member's own row (contract §18 "Machines"): what it says about itself — name, version,
main-port URL, enabled agents, workspaces, running sessions, load — and the signed upsert the
heartbeat makes of it every 5 s, stamped with the database's clock."""

from __future__ import annotations

import functools
import os
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import connections

from core import config
from fleet_app import conf, row_signature
from fleet_app.models import STALE_AFTER, Machine
from sessions_app import selectors as sessions

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def version() -> str:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return str(tomllib.load(fh)["project"]["version"])


def load_average() -> float:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # no load average on this system
        return 0.0


def own_facts() -> dict[str, Any]:
    """Everything of the row but its id, times and signature; read from this member's own
    tables (its schema) and settings."""
    return {
        "name": config.current_settings().fleet.machine,
        "version": version(),
        # The main port (loopback unless the person bound it elsewhere); work between members
        # goes over the bus, this is where a person on this machine opens it.
        "url": f"http://127.0.0.1:{config.svc_port()}",
        "agents": [a.name for a in sessions.agent_list() if a.enabled],
        "workspaces": [w.path for w in sessions.workspace_list()],
        "sessions_running": len(sessions.session_list_dicts(status="live")),
        "load": load_average(),
    }


def db_now(alias: str) -> datetime:
    """PostgreSQL's clock (what Django's `Now()` reads too): the one every member compares
    `last_seen` against."""
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        return cursor.fetchone()[0]


def beat(fleet: conf.FleetConfig, started_at: datetime | None) -> datetime:
    """Upsert this member's signed row, `last_seen` the database's now. Returns `started_at`
    (the first beat's now, kept by the caller for the following ones)."""
    alias = conf.FLEET_ALIAS
    now = db_now(alias)
    row = Machine(id=fleet.machine_id, last_seen=now, started_at=started_at or now, **own_facts())
    row.signature = row_signature.sign(fleet.secret, row.signed_fields())
    fields = [f.name for f in Machine._meta.concrete_fields if f.name != "id"]
    Machine.objects.using(alias).bulk_create(
        [row], update_conflicts=True, unique_fields=["id"], update_fields=fields
    )
    return row.started_at


def leave(fleet: conf.FleetConfig) -> None:
    """An orderly stop: the row is dated 15 s back (signed again), so every member shows this
    one `unreachable` at its next look instead of 15 s later. The next start renews it."""
    alias = conf.FLEET_ALIAS
    row = Machine.objects.using(alias).filter(pk=fleet.machine_id).first()
    if row is None:
        return
    row.last_seen = db_now(alias) - STALE_AFTER
    row.signature = row_signature.sign(fleet.secret, row.signed_fields())
    row.save(using=alias, update_fields=["last_seen", "signature"])
