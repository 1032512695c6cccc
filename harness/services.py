"""Real Redis and PostgreSQL for scale-out tests: required, never skipped."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

REDIS_URL = os.environ.get("SVC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
PG_DSN = os.environ.get("SVC_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")


def _reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def require(port: int, what: str) -> None:
    if _reachable(port):
        return
    # Never a skip: the scale-out path is a feature, and `make test` starts both services.
    pytest.fail(
        f"{what} is not reachable on 127.0.0.1:{port} (scripts/ensure-services.sh starts it)"
    )


def redis_env() -> dict[str, str]:
    """A private key prefix per test, so parallel or earlier runs never cross-talk."""
    require(6379, "Redis")
    return {"SVC_REDIS_URL": REDIS_URL, "SVC_REDIS_PREFIX": f"svc-test-{secrets.token_hex(4)}"}


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh database for one test, dropped afterwards; yields its DATABASE_URL."""
    require(5432, "PostgreSQL")
    import psycopg

    name = f"svc_test_{secrets.token_hex(4)}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_DSN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
