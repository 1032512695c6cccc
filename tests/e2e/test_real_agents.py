"""The real agent CLIs find svc by themselves (issue 9, acceptance 4): with only the config svc
wrote into a throw-away HOME (their own `mcp list` reporting svc connected right after start is
in test_start_at_bind.py); Codex's turn carries
svc's tools to the model; Claude Code and Gemini CLI, hosted by svc and bound to a profile on the
fake provider, call svc's `get_session_id` over MCP and receive their own session id.

One svc, one fake provider and one HOME for the module; each CLI runs once or twice.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness import real_agents
from harness.agents import agent_env, binary, processes_in, run_cli, throwaway_home
from harness.daemon import Daemon, migrated_home
from harness.dashboard import show
from harness.fakes import bridge_fake_formats as fmt
from harness.fakes.fake_provider import FakeProvider
from harness.real_agents import (
    MODEL,
    PROFILES,
    kinds,
    requests_with,
    settings,
    through_bridge,
)
from harness.termclient import Chat, stop_session

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class World:
    home: Path
    workspace: Path
    fake: FakeProvider
    daemon: Daemon


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with throwaway_home() as home:
        workspace = home / "work"
        workspace.mkdir()
        fake = FakeProvider().start()
        svc_home = migrated_home(tmp_path_factory.mktemp("real-agents"), settings(fake, workspace))
        daemon = Daemon(svc_home, env=agent_env(home)).start()
        try:
            yield World(home, workspace, fake, daemon)
        finally:
            daemon.stop()
            fake.stop()


def integrations(world: World) -> dict[str, Any]:
    response = httpx.get(
        f"{world.daemon.url}/api/integrations", headers=world.daemon.owner_headers(), timeout=30
    )
    assert response.status_code == 200, response.text
    return {a["agent"]: a for a in response.json()["agents"]}


def test_svc_installed_its_entry_and_skills_into_all_five_agents(world: World) -> None:
    report = integrations(world)
    assert set(report) == {"claude", "codex", "gemini", "opencode", "qwen"}
    for name, agent in report.items():
        assert agent["enabled"], name
        assert agent["mcp"]["state"] in ("written", "up to date"), agent
        assert agent["skills"]["state"] in ("written", "up to date"), agent
    settings_json = json.loads((world.home / ".gemini/settings.json").read_text())
    assert settings_json["mcpServers"]["svc"]["httpUrl"] == f"{world.daemon.url}/mcp"
    assert (world.home / ".claude/skills/svc/SKILL.md").exists()


def test_status_shows_what_was_installed_and_where(world: World) -> None:
    integrations(world)  # the daemon has synced
    done = world.daemon.manage("status", check=False)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert f"MCP entry for {world.daemon.url}/mcp" in text
    assert re.search(rf"claude\s+mcp\s+(written|up to date)\s+{world.home}/\.claude\.json", text)
    as_json = json.loads(world.daemon.manage("status", "--json").stdout)
    agents = {a["agent"]: a for a in as_json["integrations"]["agents"]}
    assert agents["codex"]["mcp"]["path"] == str(world.home / ".codex/config.toml")


async def chat_turn(world: World, agent: str, profile: str, text: str) -> tuple[Chat, str]:
    return await real_agents.chat_turn(world.daemon, world.workspace, agent, profile, text)


async def test_a_codex_turn_carries_svcs_tools_to_the_model(world: World) -> None:
    integrations(world)
    chat, sid = await chat_turn(world, "codex", "fake-responses", "[codex-tools] hello")
    try:
        sent = requests_with(world.fake, "[codex-tools]")
        assert sent, f"codex sent nothing to the fake provider: {kinds(chat)}"
        tools = json.dumps(sent[-1].body.get("tools"))
        assert sent[-1].path.endswith("/responses")
        assert through_bridge(sent[-1]), sent[-1].headers
        for name in ("get_session_id", "register_workspace", "preview", "md_preview"):
            assert name in tools, f"{name} missing from Codex's tools: {tools[:2000]}"
        assert "mcp__svc" in tools
        # svc's skills reached the model too (Codex lists them in its instructions).
        body = json.dumps(sent[-1].body)
        assert "svc-md-preview" in body and "agent-collaboration" in body
    finally:
        await chat.close()
        stop_session(world.daemon, sid)
    assert_gone(world, sid)  # codex-acp's native child included


@pytest.mark.parametrize("agent", ["qwen", "opencode"])
async def test_qwen_and_opencode_hosted_by_svc_run_on_the_profile(world: World, agent: str) -> None:
    marker = f"[{agent}-bound] hello"
    chat, sid = await chat_turn(world, agent, "fake-chat", marker)
    try:
        sent = requests_with(world.fake, marker)
        assert sent, f"{agent} sent nothing to the fake provider: {kinds(chat)}"
        assert all(through_bridge(r) for r in sent), [r.headers for r in sent]
        assert sent[-1].path == "/v1/chat/completions"
        assert f"fake {MODEL}" in chat.texts(), chat.texts()  # the answer came back to svc
    finally:
        await chat.close()
        stop_session(world.daemon, sid)
    assert_gone(world, sid)


@pytest.mark.parametrize(
    ("agent", "profile", "tool"),
    [
        ("claude", "fake-anthropic", "mcp__svc__get_session_id"),
        ("gemini", "fake-gemini", "mcp_svc_get_session_id"),
    ],
)
async def test_a_hosted_agent_calls_svc_and_learns_its_own_session_id(
    world: World, agent: str, profile: str, tool: str
) -> None:
    dialect = PROFILES[profile]
    integrations(world)
    marker = f"[call:{tool}] which svc session am I? ({agent})"
    chat, sid = await chat_turn(world, agent, profile, marker)
    try:
        sent = requests_with(world.fake, marker)
        assert sent and all(through_bridge(r) for r in sent), [r.headers for r in sent]
        turns = [fmt.extract(dialect, r.body) for r in sent]
        assert any(tool in seen.tools for seen in turns), f"{agent} never offered {tool}"
        results = [content for seen in turns for _, content in seen.results]
        mine = [c for c in results if sid in c]
        assert mine, f"svc's answer never reached the model: {results} {kinds(chat)}"
        assert f'"agent": "{agent}"' in mine[0].replace('":"', '": "')
        assert sid in chat.texts(), chat.texts()  # the fake echoed the tool result back
        # The skills svc installed are offered to the model; collaboration only to Claude.
        body = json.dumps(requests_with(world.fake, marker)[0].body)
        assert "svc-md-preview" in body
        assert ("agent-collaboration" in body) == (agent == "claude")
    finally:
        await chat.close()
        stop_session(world.daemon, sid)
    assert_gone(world, sid)


def assert_gone(world: World, sid: str, timeout: float = 10) -> None:
    """Stopping the session stops every process of the agent (its SVC_SESSION_ID in environ)."""
    marker = f"SVC_SESSION_ID={sid}".encode()
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for pid in processes_in(world.home):
            with contextlib.suppress(OSError):
                if marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                    alive.append(pid)
        if not alive:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"processes of session {sid} still running: {alive}")
        time.sleep(0.1)


# --- these two change the shared state: they run last -----------------------------------------

CONFIGS = (
    ".claude.json",
    ".codex/config.toml",
    ".gemini/settings.json",
    ".qwen/settings.json",
    ".config/opencode/opencode.json",
)


def svc_entry(path: Path) -> Any:
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text()).get("mcp_servers", {}).get("svc")
    data = json.loads(path.read_text())
    return data.get("mcp" if "opencode" in path.name else "mcpServers", {}).get("svc")


def claude_lists_svc(world: World) -> str:
    done = run_cli(
        [str(binary("claude")), "mcp", "list"], env=agent_env(world.home), cwd=world.workspace
    )
    return ANSI.sub("", done.stdout + done.stderr)


def test_rotate_tokens_rewrites_every_entry_and_the_agents_still_connect(world: World) -> None:
    integrations(world)
    old = world.daemon.mcp_token
    world.daemon.manage("rotate_tokens")  # a separate process, as a user runs it
    new = world.daemon.mcp_token
    assert new != old
    for rel in CONFIGS:
        text = (world.home / rel).read_text()
        assert new in text and old not in text, rel
    assert re.search(r"svc: .*(?<!dis)connected", claude_lists_svc(world), re.IGNORECASE)


def test_switching_auto_install_off_in_settings_removes_svc_and_on_brings_it_back(
    world: World,
) -> None:
    def patch(on: bool) -> dict[str, Any]:
        response = httpx.patch(
            f"{world.daemon.url}/api/settings",
            json={"integrations": {"mcp_auto_install": on}, "skill_auto_install": on},
            headers=world.daemon.owner_headers(),
            timeout=30,
        )
        assert response.status_code == 200, response.text
        return integrations(world)

    # The settings watcher may sync once more after the API did: then nothing is left to remove.
    report = patch(False)
    for agent in report.values():
        assert agent["mcp"]["state"] in ("removed", "skipped"), agent
        assert "mcp_auto_install is off" in agent["mcp"]["reason"], agent
        assert agent["skills"]["state"] in ("removed", "skipped"), agent
    for rel in CONFIGS:
        assert svc_entry(world.home / rel) is None, rel
    assert not (world.home / ".claude/skills/svc").exists()
    assert not re.search(r"^svc:", claude_lists_svc(world), re.MULTILINE)
    report = patch(True)
    assert {a["mcp"]["state"] for a in report.values()} <= {"written", "up to date"}
    assert all(svc_entry(world.home / rel) for rel in CONFIGS)
    assert (world.home / ".claude/skills/svc/SKILL.md").exists()


# Sync Playwright keeps a loop running in this thread: no async test may follow.


def test_the_dashboard_panel_shows_each_agent_and_syncs_again(world: World, browser: Any) -> None:
    from playwright.sync_api import expect

    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{world.daemon.url}/login?token={world.daemon.owner_token}")  # → dashboard
        show(page, "settings")
        for agent in ("claude", "codex", "gemini", "opencode", "qwen"):
            row = page.locator(f'#integrations tr[data-agent="{agent}"]')
            expect(row).to_contain_text(re.compile("written|up to date"))
        page.click("#integrations-sync")
        expect(page.locator('#integrations tr[data-agent="codex"] td').nth(1)).to_have_text(
            "up to date"
        )
        expect(page.locator("#integrations-status")).to_contain_text(f"{world.daemon.url}/mcp")
    finally:
        context.close()
