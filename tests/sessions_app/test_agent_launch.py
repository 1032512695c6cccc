"""Agent argv and environment for a session (contract §0), without a daemon: the built-in ACP
commands, and how a profile binds each vendor's CLI to svc's bridge."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from core import config
from sessions_app import agents

BASE = "http://127.0.0.1:8123/svc/local-api/work"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SVC_HOME", str(tmp_path))
    monkeypatch.setenv("SVC_PORT", "8123")
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "svcproject.settings")
    profile = {
        "provider": "anthropic",
        "base_url": "https://api.example.test",
        "api_key": "sk-real",
        "models": ["up-1", "up-2"],
        "model_aliases": {"fast": "up-2"},
    }
    (tmp_path / "settings.json").write_text(json.dumps({"profiles": {"work": profile}}))
    return tmp_path


def on_path(folder: Path, *names: str) -> None:
    for name in names:
        path = folder / name
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)


def launch(kind: str = "terminal", profile_id: str = "", name: str = "shell") -> agents.Launch:
    agent = agents.builtin_agents()[name]
    return agents.resolve_launch(
        agent, kind=kind, session_id="sid-1", workspace="/work/ws", profile_id=profile_id
    )


def test_shell_runs_the_users_login_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELL", "/bin/zsh")
    assert launch().argv == ("/bin/zsh", "-l")


def test_every_session_gets_the_svc_variables() -> None:
    env = launch().env
    auth = config.current_auth()
    assert env["SVC_SESSION_ID"] == "sid-1"
    assert env["SVC_AGENT"] == "shell"
    assert env["SVC_WORKSPACE"] == "/work/ws"
    assert env["SVC_PROFILE_ID"] == ""
    assert env["SVC_MCP_URL"] == "http://127.0.0.1:8123/mcp"
    assert env["SVC_MCP_TOKEN"] == auth.mcp_token
    assert "SVC_BRIDGE_URL" not in env
    assert "DJANGO_SETTINGS_MODULE" not in env
    assert env["TERM"] == "xterm-256color"


def test_a_profile_points_every_vendor_variable_at_the_bridge_with_its_first_model() -> None:
    env = launch(profile_id="work", name="shell").env
    base = f"{BASE}/shell.sid-1"  # the scope names the agent and the session (§0, §16)
    assert env["SVC_BRIDGE_URL"] == base
    assert env["OPENAI_BASE_URL"] == f"{base}/openai-chat/v1"
    assert env["ANTHROPIC_BASE_URL"] == f"{base}/anthropic"
    assert env["GOOGLE_GEMINI_BASE_URL"] == f"{base}/gemini"
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == env["GEMINI_API_KEY"]
    assert env["OPENAI_API_KEY"] != "sk-real"  # the profile's key stays in svc
    # Aliases come first among the client-facing ids.
    for name in ("OPENAI_MODEL", "ANTHROPIC_MODEL", "GEMINI_MODEL"):
        assert env[name] == "fast"
    for alias in ("SONNET", "OPUS", "HAIKU"):
        assert env[f"ANTHROPIC_DEFAULT_{alias}_MODEL"] == "fast"


def test_the_builtin_acp_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path(tmp_path, "claude", "claude-agent-acp", "codex", "codex-acp", "gemini", "qwen")
    on_path(tmp_path, "opencode")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert launch(kind="chat", name="claude").argv == ("claude-agent-acp",)
    assert launch(kind="chat", name="codex").argv == ("codex-acp",)
    assert launch(kind="chat", name="gemini").argv == ("gemini", "--acp")
    assert launch(kind="chat", name="qwen").argv == ("qwen", "--acp")
    assert launch(kind="chat", name="opencode").argv == ("opencode", "acp")
    assert launch(kind="terminal", name="claude").argv == ("claude",)


def test_an_adapter_that_is_not_installed_runs_from_npm_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_path(tmp_path, "claude", "codex", "npx")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert launch(kind="chat", name="claude").argv == (
        "npx",
        "-y",
        "@zed-industries/claude-agent-acp@0.23.1",
    )
    assert launch(kind="chat", name="codex").argv[:2] == ("npx", "-y")


def test_codex_gets_a_responses_provider_on_its_command_line() -> None:
    argv = launch(kind="chat", name="codex", profile_id="work").argv
    values = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
    parsed = tomllib.loads("\n".join(values))
    assert parsed["model_provider"] == "svc"
    assert parsed["model"] == "fast"
    assert parsed["model_providers"]["svc"] == {
        "name": "svc",
        "base_url": f"{BASE}/codex.sid-1/openai-responses/v1",
        "env_key": "OPENAI_API_KEY",
        "wire_api": "responses",
    }
    env = launch(kind="chat", name="codex", profile_id="work").env
    assert env["OPENAI_BASE_URL"] == f"{BASE}/codex.sid-1/openai-responses/v1"


def test_opencode_gets_a_provider_through_its_config_variable() -> None:
    env = launch(kind="chat", name="opencode", profile_id="work").env
    content = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    assert content["model"] == content["small_model"] == "svc/fast"
    provider = content["provider"]["svc"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"]["baseURL"] == f"{BASE}/opencode.sid-1/openai-chat/v1"
    assert "fast" in provider["models"]
    assert "OPENCODE_CONFIG_CONTENT" not in launch(kind="chat", name="qwen", profile_id="work").env


def test_qwen_is_told_its_auth_type_only_when_bound_to_a_profile() -> None:
    assert launch(kind="chat", name="qwen", profile_id="work").argv[-2:] == (
        "--auth-type",
        "openai",
    )
    assert "--auth-type" not in launch(kind="chat", name="qwen").argv


def test_vendor_quirks_claude_as_root_and_gemini_folder_trust() -> None:
    claude = launch(kind="chat", name="claude").env
    assert ("IS_SANDBOX" in claude) == (os.geteuid() == 0)
    assert launch(kind="chat", name="gemini").env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"


def test_the_shell_cannot_chat() -> None:
    with pytest.raises(ValueError, match="cannot run chat sessions"):
        launch(kind="chat")


def test_agent_env_from_settings_may_choose_a_model_but_not_override_svc_variables() -> None:
    agent = agents.AgentDef(
        "custom",
        ("tool",),
        env={"FOO": "bar", "SVC_SESSION_ID": "forged", "ANTHROPIC_MODEL": "mine"},
        enabled=True,
    )
    env = agents.resolve_launch(
        agent, kind="terminal", session_id="real", workspace="/w", profile_id="work"
    ).env
    assert env["FOO"] == "bar"
    assert env["ANTHROPIC_MODEL"] == "mine"
    assert env["SVC_SESSION_ID"] == "real"


def test_settings_keep_a_builtins_environment_and_add_to_it() -> None:
    settings = config.parse_settings(
        Path("/tmp/settings.json"), {"agents": {"gemini": {"env": {"EXTRA": "1"}}}}
    )
    gemini = agents.all_agents(settings)["gemini"]
    assert gemini.env == {"GEMINI_CLI_TRUST_WORKSPACE": "true", "EXTRA": "1"}
    assert gemini.vendor == "gemini"


def test_the_fleet_secret_never_reaches_an_agent_whatever_its_variable_is_called(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key to every member's sessions (contract §18): `fleet.secret_env` may name any variable."""
    settings = json.loads((home / "settings.json").read_text())
    settings["fleet"] = {"enabled": False, "secret_env": "TEAM_FLEET_KEY"}
    (home / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("TEAM_FLEET_KEY", "k" * 40)
    monkeypatch.setenv("OTHER_VARIABLE", "kept")
    env = agents.session_env(agents.get_agent("shell"), session_id="s1", workspace=str(home))
    assert "TEAM_FLEET_KEY" not in env
    assert env["OTHER_VARIABLE"] == "kept"
