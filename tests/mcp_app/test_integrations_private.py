"""Issue 41, finding 3: svc's MCP token in the agents' configs is the owner's alone.

Gemini CLI, Qwen Code and OpenCode create their configs 0644 (measured with the CLIs of
tests/fixtures/agents: `gemini mcp add`, `qwen mcp add`, a first `opencode` run), and a person's
home is often 0755. svc used to keep such a file's mode when it added its entry, so every local
user could read the MCP token — and with it run the owner's agents (`initialize_subagents`).
Here another unix user (harness/other_user.py) tries to read each file after svc's sync.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from core import config
from harness.other_user import readable_by_other
from mcp_app import integrations
from tests.mcp_app.test_integrations import AGENTS, CODEX_TOML, JSON_CONFIGS, expected_entry

CONFIGS = {name: rel for name, (rel, _) in JSON_CONFIGS.items()} | {"codex": ".codex/config.toml"}


@pytest.fixture
def shared_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A HOME other users can enter (0755, as /home/<user> often is), each agent's folder 0755
    and its config 0644, as the CLIs leave them; svc's own state private beside it."""
    user = Path(tempfile.mkdtemp(prefix="svc-shared-home-", dir="/var/tmp"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in AGENTS:
        exe = bin_dir / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("SVC_HOME", str(tmp_path / "svc"))
    monkeypatch.setenv("SVC_PORT", "8765")
    for name, rel in CONFIGS.items():
        path = user / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = CODEX_TOML if name == "codex" else json.dumps(JSON_CONFIGS[name][1], indent=2)
        path.write_text(text)
    for path in [user, *(p for p in user.rglob("*"))]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield user
    shutil.rmtree(user, ignore_errors=True)


def test_another_user_cannot_read_the_token_svc_adds_to_a_0644_agent_config(
    shared_home: Path,
) -> None:
    paths = {name: shared_home / rel for name, rel in CONFIGS.items()}
    assert all(readable_by_other(p) for p in paths.values())  # the attacker can read them now
    report = integrations.integrations_sync()
    token = config.current_auth().mcp_token
    for name, path in paths.items():
        assert token in path.read_text(), name
        assert not readable_by_other(path), f"{name}: {path} shows svc's token to other users"
        assert path.stat().st_mode & 0o777 == 0o600, name
    reasons = {a["agent"]: a["mcp"]["reason"] for a in report["agents"]}
    assert "made private" in reasons["gemini"] and "0644 → 0600" in reasons["gemini"]


def test_a_config_already_holding_svcs_entry_is_made_private_at_the_next_sync(
    shared_home: Path,
) -> None:
    """The upgrade: an older svc wrote its entry into a 0644 file; the entry is up to date, so
    nothing is rewritten, but the file and the agent's folder are made private all the same."""
    integrations.integrations_sync()
    path = shared_home / CONFIGS["gemini"]
    path.chmod(0o644)
    path.parent.chmod(0o755)
    before = path.read_bytes()
    report = {a["agent"]: a for a in integrations.integrations_sync()["agents"]}
    assert report["gemini"]["mcp"]["state"] == "up to date"
    assert path.read_bytes() == before
    assert not readable_by_other(path)


def test_qwen_saving_its_settings_as_a_new_0644_file_still_hides_the_token(
    shared_home: Path,
) -> None:
    """Qwen Code 0.24.4 saves settings.json through `<file>.tmp` and a rename, so every save (its
    first run's settings migration included) leaves a new 0644 file holding svc's entry. svc makes
    ~/.qwen private (0700), which Qwen never changes."""
    integrations.integrations_sync()
    path = shared_home / CONFIGS["qwen"]
    saved = json.loads(path.read_text()) | {"$version": 4}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(saved, indent=2))
    tmp.chmod(0o644)
    os.replace(tmp, path)
    assert saved["mcpServers"]["svc"] == expected_entry("qwen", config.current_auth().mcp_token)
    assert path.stat().st_mode & 0o777 == 0o644
    assert not readable_by_other(path)
    assert shared_home.stat().st_mode & 0o777 == 0o755  # the home itself is never changed


def test_a_file_svc_took_its_entry_out_of_keeps_its_mode(shared_home: Path) -> None:
    integrations.integrations_sync()
    path = shared_home / CONFIGS["opencode"]
    path.chmod(0o640)
    config.write_settings({"integrations": {"mcp_auto_install": False}})
    integrations.integrations_sync()
    assert "svc" not in json.loads(path.read_text())["mcp"]
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_file_svc_cannot_parse_is_left_untouched_mode_included(shared_home: Path) -> None:
    """Contract §9: svc does not edit a file it cannot parse (JSONC here) — nor its mode."""
    path = shared_home / CONFIGS["gemini"]
    path.write_text('{\n  // my comment\n  "mcpServers": {}\n}\n')
    path.chmod(0o644)
    report = {a["agent"]: a for a in integrations.integrations_sync()["agents"]}
    assert report["gemini"]["mcp"]["state"] == "skipped"
    assert path.stat().st_mode & 0o777 == 0o644
    assert config.current_auth().mcp_token not in path.read_text()
