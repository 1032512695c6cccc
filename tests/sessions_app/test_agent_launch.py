"""Agent argv and environment for a session (SPEC §0), without a daemon."""

from __future__ import annotations

import pytest

from sessions_app import agents
from svcproject import config


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_HOME", str(tmp_path))
    monkeypatch.setenv("SVC_PORT", "8123")
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "svcproject.settings")


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


def test_a_profile_points_every_vendor_variable_at_the_bridge() -> None:
    env = launch(profile_id="work", name="codex", kind="terminal").env
    base = "http://127.0.0.1:8123/svc/local-api/work/codex"
    assert env["SVC_BRIDGE_URL"] == base
    assert env["OPENAI_BASE_URL"] == f"{base}/openai-responses/v1"
    assert env["ANTHROPIC_BASE_URL"] == f"{base}/anthropic"
    assert env["GOOGLE_GEMINI_BASE_URL"] == f"{base}/gemini"
    assert env["OPENAI_API_KEY"] and env["ANTHROPIC_API_KEY"] and env["GEMINI_API_KEY"]


def test_chat_agents_use_their_acp_command() -> None:
    assert launch(kind="chat", name="opencode").argv == ("opencode", "acp")
    assert launch(kind="chat", name="gemini").argv[0] == "gemini"


def test_the_shell_cannot_chat() -> None:
    with pytest.raises(ValueError, match="cannot run chat sessions"):
        launch(kind="chat")


def test_agent_env_from_settings_is_applied_but_cannot_override_svc_variables() -> None:
    agent = agents.AgentDef(
        "custom", ("tool",), env={"FOO": "bar", "SVC_SESSION_ID": "forged"}, enabled=True
    )
    env = agents.resolve_launch(agent, kind="terminal", session_id="real", workspace="/w").env
    assert env["FOO"] == "bar"
    assert env["SVC_SESSION_ID"] == "real"
