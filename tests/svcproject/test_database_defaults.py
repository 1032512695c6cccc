"""The embedded default: SQLite in WAL mode with IMMEDIATE transactions; rows survive reconcile."""

from __future__ import annotations

import pytest
from django.db import connection

from sessions_app.models import Session


@pytest.mark.django_db
def test_sqlite_runs_in_wal_mode_with_immediate_transactions() -> None:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
    assert connection.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


def test_a_session_ends_once() -> None:
    session = Session(agent="shell", workspace="/tmp", status="running")
    assert session.mark_exited(3) is True
    assert session.mark_exited(9) is False
    assert (session.status, session.exit_code) == ("exited", 3)
