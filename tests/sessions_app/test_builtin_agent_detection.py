"""Built-in agents are enabled when their executable is on PATH, unless settings say otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import config
from sessions_app import agents


def fake_executable(folder: Path, name: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)


def settings_with(raw: dict) -> config.Settings:
    return config.parse_settings(Path("/tmp/settings.json"), raw)


def test_a_builtin_on_path_is_enabled_and_one_missing_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_executable(tmp_path, "claude")
    monkeypatch.setenv("PATH", str(tmp_path))
    table = agents.all_agents(settings_with({}))
    assert table["claude"].enabled and table["claude"].executable_found
    assert not table["codex"].enabled and not table["codex"].executable_found
    assert table["shell"].enabled


def test_settings_override_detection_and_add_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_executable(tmp_path, "claude")
    monkeypatch.setenv("PATH", str(tmp_path))
    table = agents.all_agents(
        settings_with(
            {
                "agents": {
                    "claude": {"enabled": False},
                    "codex": {"enabled": True},
                    "mine": {"command": ["claude", "--fast"], "acp_command": ["claude", "acp"]},
                }
            }
        )
    )
    assert not table["claude"].enabled
    assert table["codex"].enabled and table["codex"].command == ("codex",)
    assert table["mine"].enabled and table["mine"].source == "settings"
    assert table["mine"].acp_command == ("claude", "acp")
