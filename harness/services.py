"""Real Redis and PostgreSQL for scale-out tests: required, never skipped."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

REDIS_URL = os.environ.get("SVC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _pg_dsn() -> str:
    """SVC_TEST_PG_DSN; else the role scripts/ensure-services.sh made where PostgreSQL refuses a
    password-less login (a default Debian server); else `postgres` on trusted loopback."""
    if given := os.environ.get("SVC_TEST_PG_DSN"):
        return given
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    made = Path(os.environ.get("SVC_TEST_STATE") or cache / "svc-test") / "pg-dsn"
    if made.is_file() and (dsn := made.read_text().strip()):
        return dsn
    return "postgresql://postgres@127.0.0.1:5432/postgres"


PG_DSN = _pg_dsn()


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


def with_password(url: str, made_up: str) -> tuple[str, str]:
    """The URL and the password it logs in with: its own where the server asks for one, else
    `made_up` put in (a server that trusts loopback takes any password)."""
    parts = urlsplit(url)
    if parts.password:
        return url, parts.password
    netloc = f"{parts.username}:{made_up}@{parts.hostname}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc)), made_up
