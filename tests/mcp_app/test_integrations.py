"""Auto-install into agents (contract §9) against a temp HOME already holding each agent's config:
svc's entry is right for each, nothing else changes, and svc cleans up only after itself."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from core import config, rotation
from mcp_app import integrations

CODEX_TOML = """\
# Codex settings, kept by hand.
model = "o3"  # the usual one
approval_policy = "on-request"

[profiles.fast]
model = "gpt-5-mini"   # for quick questions

# The servers I use every day.
[mcp_servers.github]
command = "github-mcp"
args = ["--read-only"]
env = { GITHUB_TOKEN = "ghp_example" }

[tui]
notifications = true
"""

JSON_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "claude": (
        ".claude.json",
        {
            "numStartups": 12,
            "projects": {"/src/app": {"allowedTools": ["Bash"], "mcpServers": {}}},
            "mcpServers": {"other": {"type": "stdio", "command": "other-mcp", "args": []}},
            "theme": "dark",
        },
    ),
    "gemini": (
        ".gemini/settings.json",
        {
            "general": {"vimMode": True},
            "mcpServers": {"other": {"command": "other-mcp"}},
            "security": {"auth": {"selectedType": "oauth-personal"}},
        },
    ),
    "qwen": (
        ".qwen/settings.json",
        {"mcpServers": {"other": {"httpUrl": "https://example.test/mcp"}}, "ui": {"theme": "x"}},
    ),
    "opencode": (
        ".config/opencode/opencode.json",
        {
            "$schema": "https://opencode.ai/config.json",
            "theme": "tokyonight",
            "mcp": {"other": {"type": "local", "command": ["other-mcp"]}},
        },
    ),
}
AGENTS = ("claude", "codex", "gemini", "opencode", "qwen")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with every agent's config, all five agents on PATH, svc's own state beside it."""
    user = tmp_path / "user"
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
    for rel, data in JSON_CONFIGS.values():
        write(user / rel, json.dumps(data, indent=2) + "\n")
    write(user / ".codex/config.toml", CODEX_TOML)
    return user


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def set_settings(**raw: Any) -> None:
    config.write_settings(raw)


def states(report: integrations.Report) -> dict[str, tuple[str, str]]:
    return {a["agent"]: (a["mcp"]["state"], a["skills"]["state"]) for a in report["agents"]}


def expected_entry(agent: str, token: str) -> dict[str, Any]:
    url, bearer = "http://127.0.0.1:8765/mcp", f"Bearer {token}"
    session = {
        "claude": "${SVC_SESSION_ID:-}",
        "gemini": "${SVC_SESSION_ID:-}",
        "qwen": "${SVC_SESSION_ID}",
        "opencode": "{env:SVC_SESSION_ID}",
    }
    headers = {"Authorization": bearer, "X-Svc-Session-Id": session.get(agent, "")}
    return {
        "claude": {"type": "http", "url": url, "headers": headers},
        "gemini": {"httpUrl": url, "headers": headers},
        "qwen": {"httpUrl": url, "headers": headers},
        "opencode": {
            "type": "remote",
            "url": url,
            "headers": headers,
            "enabled": True,
            "oauth": False,
        },
        "codex": {
            "url": url,
            "http_headers": {"Authorization": bearer},
            "env_http_headers": {"X-Svc-Session-Id": "SVC_SESSION_ID"},
        },
    }[agent]


def entries(home: Path) -> dict[str, Any]:
    found = {name: json.loads((home / rel).read_text()) for name, (rel, _) in JSON_CONFIGS.items()}
    codex = tomllib.loads((home / ".codex/config.toml").read_text())
    return {
        "claude": found["claude"]["mcpServers"].get("svc"),
        "gemini": found["gemini"]["mcpServers"].get("svc"),
        "qwen": found["qwen"]["mcpServers"].get("svc"),
        "opencode": found["opencode"]["mcp"].get("svc"),
        "codex": codex["mcp_servers"].get("svc"),
    }


def test_svcs_entry_has_each_agents_shape_and_the_real_port_and_token(home: Path) -> None:
    report = integrations.integrations_sync()
    assert states(report) == {name: ("written", "written") for name in AGENTS}
    token = config.current_auth().mcp_token
    assert entries(home) == {name: expected_entry(name, token) for name in AGENTS}


def test_every_foreign_key_table_and_comment_survives(home: Path) -> None:
    integrations.integrations_sync()
    for name, (rel, original) in JSON_CONFIGS.items():
        data = json.loads((home / rel).read_text())
        servers = data["mcp" if name == "opencode" else "mcpServers"]
        assert list(servers) == ["other", "svc"], name  # appended, order kept
        del servers["svc"]
        assert data == original, name
        assert list(data) == list(original), name
    codex = (home / ".codex/config.toml").read_text()
    start = codex.index("[mcp_servers.svc]")
    end = codex.index("[tui]")  # svc's table sits with the other servers
    assert codex[:start] + codex[end:] == CODEX_TOML  # every byte the user wrote, comments too


def test_a_second_sync_finds_everything_up_to_date_and_writes_nothing(home: Path) -> None:
    integrations.integrations_sync()
    files = [home / rel for rel, _ in JSON_CONFIGS.values()] + [home / ".codex/config.toml"]
    before = {f: f.stat().st_mtime_ns for f in files}
    report = integrations.integrations_sync()
    assert states(report) == {name: ("up to date", "up to date") for name in AGENTS}
    assert {f: f.stat().st_mtime_ns for f in files} == before


def test_an_unparseable_file_is_left_byte_identical_and_reported(home: Path) -> None:
    broken_json = b'{"general": {"vimMode": true,}  // a comment\n'
    broken_toml = b'model = "o3"\n[mcp_servers.github\ncommand = "x"\n'
    (home / ".gemini/settings.json").write_bytes(broken_json)
    (home / ".codex/config.toml").write_bytes(broken_toml)
    report = {a["agent"]: a for a in integrations.integrations_sync()["agents"]}
    assert (home / ".gemini/settings.json").read_bytes() == broken_json
    assert (home / ".codex/config.toml").read_bytes() == broken_toml
    for name, path in (("gemini", ".gemini/settings.json"), ("codex", ".codex/config.toml")):
        mcp = report[name]["mcp"]
        assert mcp["state"] == "skipped"
        assert str(home / path) in mcp["reason"] and "untouched" in mcp["reason"]
        assert report[name]["skills"]["state"] == "written"  # the skills do not depend on it
    assert report["claude"]["mcp"]["state"] == "written"


def test_a_users_own_skill_survives(home: Path) -> None:
    own = "---\nname: svc\ndescription: my own svc notes\n---\nDo it my way.\n"
    write(home / ".claude/skills/svc/SKILL.md", own)
    report = {a["agent"]: a for a in integrations.integrations_sync()["agents"]}
    assert (home / ".claude/skills/svc/SKILL.md").read_text() == own
    claude = report["claude"]
    assert claude["skill_files"]["svc"] == "skipped"
    assert "not svc's" in claude["skills"]["reason"]
    assert claude["skill_files"]["svc-session"] == "written"
    installed = (home / ".claude/skills/svc-session/SKILL.md").read_text()
    assert installed == integrations.skill_text("svc-session")


def test_collaboration_skills_go_to_claude_and_codex_only(home: Path) -> None:
    integrations.integrations_sync()
    for folder in (".claude/skills", ".codex/skills"):
        assert (home / folder / "agent-collaboration/SKILL.md").exists(), folder
    for folder in (".gemini/skills", ".qwen/skills", ".config/opencode/skills"):
        assert (home / folder / "svc/SKILL.md").exists(), folder
        assert not (home / folder / "agent-collaboration").exists(), folder


def test_turning_the_settings_off_removes_only_svcs_entries_and_skills(home: Path) -> None:
    own = "---\nname: svc-preview\ndescription: mine\n---\n"
    write(home / ".gemini/skills/svc-preview/SKILL.md", own)
    originals = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    integrations.integrations_sync()
    set_settings(integrations={"mcp_auto_install": False}, skill_auto_install=False)
    report = integrations.integrations_sync()
    assert states(report) == {name: ("removed", "removed") for name in AGENTS}
    after = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    assert after == originals  # byte for byte, the user's own skill included
    assert not (home / ".claude/skills/svc").exists()
    again = integrations.integrations_sync()
    assert all(a["mcp"]["state"] == "skipped" for a in again["agents"])
    assert "mcp_auto_install is off" in again["agents"][0]["mcp"]["reason"]


@pytest.mark.django_db  # rotation also ends every browser session (a table)
def test_rotate_tokens_rewrites_the_token_everywhere(home: Path) -> None:
    integrations.integrations_sync()
    old = config.current_auth().mcp_token
    new = rotation.tokens_rotate().mcp_token
    assert new != old
    assert entries(home) == {name: expected_entry(name, new) for name in AGENTS}
    for path in [home / rel for rel, _ in JSON_CONFIGS.values()] + [home / ".codex/config.toml"]:
        assert old not in path.read_text(), path


def test_an_agent_that_is_not_enabled_is_skipped_and_says_why(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_settings(agents={"qwen": {"enabled": False}})
    report = {a["agent"]: a for a in integrations.integrations_sync()["agents"]}
    assert report["qwen"]["mcp"]["state"] == "skipped"
    assert "not enabled" in report["qwen"]["mcp"]["reason"]
    assert "svc" not in json.loads((home / ".qwen/settings.json").read_text())["mcpServers"]


def test_missing_configs_are_created_private_and_a_symlinked_one_stays_a_link(
    home: Path, tmp_path: Path
) -> None:
    (home / ".qwen/settings.json").unlink()
    dotfiles = tmp_path / "dotfiles" / "claude.json"
    write(dotfiles, (home / ".claude.json").read_text())
    (home / ".claude.json").unlink()
    (home / ".claude.json").symlink_to(dotfiles)
    integrations.integrations_sync()
    created = home / ".qwen/settings.json"
    assert created.stat().st_mode & 0o777 == 0o600
    assert json.loads(created.read_text()) == {"mcpServers": {"svc": entries(home)["qwen"]}}
    assert (home / ".claude.json").is_symlink()
    assert "svc" in json.loads(dotfiles.read_text())["mcpServers"]


def test_a_file_that_is_not_an_object_where_servers_go_is_left_alone(home: Path) -> None:
    odd = json.dumps({"mcp": ["not", "an", "object"]})
    write(home / ".config/opencode/opencode.json", odd)
    report = {a["agent"]: a for a in integrations.integrations_sync()["agents"]}
    assert report["opencode"]["mcp"]["state"] == "skipped"
    assert "mcp is not a JSON object" in report["opencode"]["mcp"]["reason"]
    assert (home / ".config/opencode/opencode.json").read_text() == odd


def test_claude_codes_config_lock_is_respected(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_app import integration_files

    monkeypatch.setattr(integration_files, "LOCK_WAIT_S", 0.2)
    lock = home / ".claude.json.lock"
    lock.mkdir()  # Claude Code is saving its config right now
    before = (home / ".claude.json").read_bytes()
    claude = integrations.integrations_sync()["agents"][0]
    assert (
        claude["mcp"]["state"] == "skipped" and "held by another program" in claude["mcp"]["reason"]
    )
    assert (home / ".claude.json").read_bytes() == before
    lock.rmdir()
    assert integrations.integrations_sync()["agents"][0]["mcp"]["state"] == "written"
    assert not lock.exists()  # svc released the lock it took
