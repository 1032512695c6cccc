"""settings.json is never lost (issue 34, contract §1): a file svc cannot read is reported with
its line and column (or its key), every write of svc's is refused while the file on disk is
broken — checked against the file itself, not svc's cached copy — and every write keeps the
file it replaces as settings.json.bak."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from core import config, settings_store
from core.errors import DomainError

GOOD = {
    "profiles": {"p": {"provider": "anthropic", "base_url": "https://a.example", "api_key": "k"}}
}
# A hand edit in progress: a new "tunnels" block with a trailing comma (line 4, column 3).
BROKEN = '{\n  "workspaces": [],\n  "tunnels": {"t": {"kind": "command"},\n  }\n}\n'


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SVC_HOME", str(tmp_path))
    return tmp_path


def hand_write(path: Path, text: str) -> None:
    """An editor's save: new bytes and a new mtime (svc's cache sees the change)."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 5_000_000, before + 5_000_000))


def test_text_that_is_not_json_is_reported_with_its_line_and_column(home: Path) -> None:
    path = home / "settings.json"
    config.write_settings(GOOD)
    assert config.current_settings().profiles
    hand_write(path, BROKEN)
    error = config.settings_error()
    assert error is not None
    assert (error["line"], error["column"]) == (4, 3)
    assert error["message"].startswith(f"{path} line 4, column 3: not valid JSON")
    assert list(config.current_settings().profiles) == ["p"]  # the last good ones stay in force


def test_a_schema_error_names_its_key(home: Path) -> None:
    config.write_settings(GOOD)
    hand_write(home / "settings.json", json.dumps({"tunnels": {"t": 7}}))
    error = config.settings_error()
    assert error is not None and error["key"] == "tunnels.t" and error["line"] is None
    assert "tunnels.t: must be an object" in error["message"]


@pytest.mark.parametrize("write", ["write_settings", "update_settings", "replace", "update"])
def test_no_write_replaces_a_file_svc_cannot_read(home: Path, write: str) -> None:
    path = home / "settings.json"
    config.write_settings(GOOD)
    assert config.settings_error() is None
    hand_write(path, BROKEN)
    # svc has not looked at the file since it broke: the check reads the disk, not the cache.
    writers = {
        "write_settings": lambda: config.write_settings({"workspaces": []}),
        "update_settings": lambda: config.update_settings({"workspaces": []}),
        "replace": lambda: settings_store.settings_replace(raw={"workspaces": []}),
        "update": lambda: settings_store.settings_update(changes={"workspaces": []}),
    }
    with pytest.raises(DomainError) as refused:
        writers[write]()
    assert (refused.value.status, refused.value.code) == (409, "settings_invalid")
    assert f"{path} line 4, column 3" in refused.value.message
    assert "fix the file by hand" in refused.value.message
    assert path.read_text() == BROKEN
    assert not (home / "settings.json.bak").exists()


def test_a_write_with_no_good_copy_at_all_is_refused_too(home: Path) -> None:
    (home / "settings.json").write_text(BROKEN)
    with pytest.raises(DomainError) as refused:
        settings_store.settings_update(changes={"workspaces": []})
    assert refused.value.status == 409
    assert (home / "settings.json").read_text() == BROKEN


def test_every_write_keeps_the_previous_file_as_bak(home: Path) -> None:
    path, bak = home / "settings.json", home / "settings.json.bak"
    config.write_settings({"workspaces": []})
    assert not bak.exists()  # there was no file before the first write
    by_hand = '{"profiles": {"p": {"provider": "anthropic",  "base_url": "https://a.example"}},'
    by_hand += '\n "mine": 1}'
    hand_write(path, by_hand)
    config.update_settings({"workspaces": [str(home)]})
    assert bak.read_text() == by_hand  # byte for byte, spacing included
    assert stat.S_IMODE(bak.stat().st_mode) == 0o600
    saved = json.loads(path.read_text())
    assert saved["mine"] == 1 and saved["workspaces"] == [str(home)]
    config.update_settings({"workspaces": []})
    assert json.loads(bak.read_text())["workspaces"] == [str(home)]


def test_a_file_broken_right_after_a_write_keeps_the_written_settings_in_force(home: Path) -> None:
    config.write_settings(GOOD)
    (home / "settings.json").write_text(BROKEN)  # before anything read the file again
    assert list(config.current_settings().profiles) == ["p"]
    assert config.settings_error() is not None
