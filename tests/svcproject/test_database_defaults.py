"""The embedded default: SQLite in WAL mode with IMMEDIATE transactions; rows survive reconcile."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.db import connection

from sessions_app import services
from sessions_app.models import Session


@pytest.mark.django_db
def test_sqlite_runs_in_wal_mode_with_immediate_transactions() -> None:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
    assert connection.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


@pytest.mark.django_db
def test_reconcile_ends_only_sessions_whose_process_is_gone() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = Session.objects.create(agent="shell", workspace="/tmp", status="running", pid=gone.pid)
    mine = Session.objects.create(agent="shell", workspace="/tmp", status="running", pid=1)
    assert services.sessions_reconcile() == 1
    dead.refresh_from_db()
    mine.refresh_from_db()
    assert (dead.status, mine.status) == ("exited", "running")
    assert dead.ended_at is not None
    assert Session.objects.count() == 2


def test_a_session_ends_once() -> None:
    session = Session(agent="shell", workspace="/tmp", status="running")
    assert session.mark_exited(3) is True
    assert session.mark_exited(9) is False
    assert (session.status, session.exit_code) == ("exited", 3)
