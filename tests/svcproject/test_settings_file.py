"""settings.json: strict validation naming file and key, atomic writes that keep unknown keys."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from core import config
from harness.daemon import manage, migrated_home

GOOD_PROFILE = {"provider": "anthropic", "base_url": "https://api.anthropic.com", "api_key": "k"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SVC_HOME", str(tmp_path))
    return tmp_path


def write(home: Path, data: object) -> Path:
    path = home / "settings.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("content", "key", "problem"),
    [
        ("{not json", "(file)", "not valid JSON"),
        ({"profiles": []}, "profiles", "must be an object"),
        ({"workspaces": "/tmp"}, "workspaces", "must be a list of strings"),
        ({"profiles": {"Bad Id!": GOOD_PROFILE}}, "profiles.Bad Id!", "invalid id"),
        ({"profiles": {"p": {**GOOD_PROFILE, "provider": "x"}}}, "profiles.p.provider", "one of"),
        ({"profiles": {"p": {**GOOD_PROFILE, "models": "m"}}}, "profiles.p.models", "list"),
        ({"agents": {"a": {"enabled": "yes"}}}, "agents.a.enabled", "true or false"),
        ({"integrations": {"mcp_auto_install": 1}}, "integrations.mcp_auto_install", "true"),
        ({"channels": {"slack": "x"}}, "channels.slack", "must be an object"),
    ],
)
def test_an_invalid_file_is_refused_naming_file_and_key(
    home: Path, content: object, key: str, problem: str
) -> None:
    path = write(home, content)
    with pytest.raises(config.SettingsError) as err:
        config.read_settings_file(path)
    assert err.value.key == key
    # Text that is not JSON is placed by line and column instead of a key.
    where = f"line {err.value.line}, column {err.value.column}" if err.value.line else key
    assert str(path) in str(err.value) and where in str(err.value) and problem in str(err.value)


def test_start_up_fails_with_a_message_naming_the_key(tmp_path: Path) -> None:
    home = migrated_home(tmp_path / "home")
    write(home, {"profiles": {"ok": {**GOOD_PROFILE, "base_url": 42}}})
    result = manage(home, "check", check=False)
    assert result.returncode == 2
    assert "settings.json: profiles.ok.base_url: must be a URL string" in result.stderr


def test_start_up_fails_on_broken_json(tmp_path: Path) -> None:
    home = migrated_home(tmp_path / "home")
    write(home, '{"profiles": {')
    result = manage(home, "check", check=False)
    assert result.returncode == 2
    assert "settings.json line 1, column 15: not valid JSON" in result.stderr


def test_a_write_keeps_unknown_keys(home: Path) -> None:
    write(home, {"future_feature": {"nested": [1, 2]}, "profiles": {"p": GOOD_PROFILE}})
    config.update_settings({"workspaces": [str(home)]})
    saved = json.loads((home / "settings.json").read_text())
    assert saved["future_feature"] == {"nested": [1, 2]}
    assert saved["profiles"]["p"] == GOOD_PROFILE
    assert saved["workspaces"] == [str(home)]


def test_a_write_is_atomic_and_private(home: Path) -> None:
    config.write_settings({"workspaces": []})
    path = home / "settings.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in os.listdir(home) if p.endswith(".tmp")]


def test_an_invalid_write_leaves_the_file_untouched(home: Path) -> None:
    write(home, {"workspaces": []})
    before = (home / "settings.json").read_text()
    with pytest.raises(config.SettingsError):
        config.write_settings({"profiles": {"p": {"provider": "nope"}}})
    assert (home / "settings.json").read_text() == before


def test_the_file_is_re_read_when_it_changes(home: Path) -> None:
    write(home, {"profiles": {}})
    assert config.current_settings().profiles == {}
    path = write(home, {"profiles": {"p": GOOD_PROFILE}})
    os.utime(path, ns=(1, path.stat().st_mtime_ns + 1_000_000))
    assert list(config.current_settings().profiles) == ["p"]


def test_a_running_daemon_keeps_its_last_good_settings(home: Path) -> None:
    write(home, {"profiles": {"p": GOOD_PROFILE}})
    assert list(config.current_settings().profiles) == ["p"]
    path = write(home, "{broken")
    os.utime(path, ns=(1, path.stat().st_mtime_ns + 2_000_000))
    assert list(config.current_settings().profiles) == ["p"]


def test_profiles_list_aliases_first_and_read_keys_from_the_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "from-env")
    profile = {
        "provider": "openai-chat",
        "base_url": "https://api.openai.com/v1/",
        "api_key_env": "MY_KEY",
        "models": ["gpt-a", "gpt-b"],
        "model_aliases": {"fast": "gpt-b"},
    }
    settings = config.parse_settings(home / "settings.json", {"profiles": {"p": profile}})
    parsed = settings.profiles["p"]
    assert parsed.client_model_ids() == ["fast", "gpt-a", "gpt-b"]
    assert parsed.resolved_key() == "from-env"
    assert parsed.base_url == "https://api.openai.com/v1"
    assert "from-env" not in repr(parsed)
