"""The row-seal key (core/row_seal.py): private to the owner, made once, the same for every
process of one $SVC_HOME and kept by rotate_tokens; a seal verifies only its own fields."""

from __future__ import annotations

import logging
import stat
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core import row_seal
from harness.daemon import manage, migrated_home

SEAL_OF = "from core import row_seal; print(row_seal.seal('t', 'a', 1))"


def seal_in(home: Path) -> str:
    return manage(home, "shell", "-c", SEAL_OF).stdout.strip().splitlines()[-1]


def test_the_key_is_private_made_once_and_shared_by_the_homes_processes(tmp_path: Path) -> None:
    home = migrated_home(tmp_path / "home")
    with ThreadPoolExecutor(3) as pool:  # three processes making it at once agree
        seals = set(pool.map(seal_in, [home] * 3))
    assert len(seals) == 1
    key = home / row_seal.KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert [p.name for p in home.iterdir() if p.name.startswith(".row-seal")] == []
    manage(home, "rotate_tokens")
    assert seal_in(home) == seals.pop()  # what was queued outlives a rotation
    other = migrated_home(tmp_path / "another member")
    assert seal_in(other) != seal_in(home)  # each member its own key


def test_a_seal_verifies_its_own_fields_only() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    given = row_seal.seal("queued prompt", "s1", "text", when)
    assert row_seal.sealed("queued prompt", given, "s1", "text", when)
    assert not row_seal.sealed("queued prompt", given, "s1", "text!", when)
    assert not row_seal.sealed("handover code", given, "s1", "text", when)
    for wrong in ("", None, 42, given.upper()):
        assert not row_seal.sealed("queued prompt", wrong, "s1", "text", when)


def test_a_refused_row_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="core.row_seal"):
        for _ in range(3):
            row_seal.refused("queued prompt", 7, "never sent")
        row_seal.refused("queued prompt", 8, "never sent")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and "svc did not write" in lines[0], lines
