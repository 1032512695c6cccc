"""A machine's id (contract §18): made once in $SVC_HOME/machine.json (0600), the same on every
start, and never silently replaced — it names the machine's own tables in the fleet's database."""

from __future__ import annotations

import json
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from core.settings_schema import SettingsError
from fleet_app.identity import machine_id


def test_the_id_is_made_once_private_and_stays_the_same(tmp_path: Path) -> None:
    first = machine_id(tmp_path)
    path = tmp_path / "machine.json"
    assert len(first) == 32 and int(first, 16) >= 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"id": first}
    path.chmod(0o644)  # loosened by hand: made private again, id kept
    assert machine_id(tmp_path) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_processes_starting_at_once_agree_on_one_id(tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        ids = set(pool.map(lambda _: machine_id(tmp_path), range(16)))
    assert len(ids) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["machine.json"]  # no temporary file left


@pytest.mark.parametrize("text", ["{not json", '{"id": "short"}', '["a"]'])
def test_a_file_svc_cannot_read_stops_start_up_and_is_kept(tmp_path: Path, text: str) -> None:
    path = tmp_path / "machine.json"
    path.write_text(text)
    with pytest.raises(SettingsError) as err:
        machine_id(tmp_path)
    assert err.value.path == path and err.value.key == "id"
    assert "restore the file" in str(err.value)
    assert path.read_text() == text
