"""The schemas of a fleet's database (contract §18): each member's own (`svc_m_<id>`) and the
shared one (`svc_fleet`), made as a connection opens — before any migration or query needs
them — and the shared one migrated after the member's own."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from django.core.management import call_command
from django.db import IntegrityError, ProgrammingError, connections

from fleet_app import conf

logger = logging.getLogger(__name__)

# pg_advisory_lock's key for migrating the shared schema: members starting at once take turns.
MIGRATE_LOCK = 0x5F5C_F1EE


def create_on_connect(sender: Any, connection: Any, **kwargs: Any) -> None:
    schema = conf.schema_of(connection.alias)
    if schema is None:
        return
    try:
        with connection.cursor() as cursor:
            # The search path set as the connection opened names it already: PostgreSQL uses
            # a schema made later in the same session at once.
            cursor.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    except (IntegrityError, ProgrammingError) as exc:
        # Two members opening their first connections at once both try to make `svc_fleet`:
        # one wins, the other's IF NOT EXISTS races it and fails. The schema exists either way.
        if not isinstance(
            exc.__cause__, psycopg.errors.UniqueViolation | psycopg.errors.DuplicateSchema
        ):
            raise
        logger.debug("schema %s was made by another connection meanwhile", schema)


def migrate_shared(*, verbosity: int = 1) -> None:
    """Migrate the shared schema, one member at a time (a session-level advisory lock)."""
    connection = connections[conf.FLEET_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK])
    try:
        call_command("migrate", database=conf.FLEET_ALIAS, interactive=False, verbosity=verbosity)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK])
