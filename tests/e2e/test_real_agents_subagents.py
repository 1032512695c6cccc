"""A parallel subagent turn with three real agent CLIs of different vendors (issue 11,
acceptance 6): Claude (claude-agent-acp), Codex (codex-acp) and Gemini CLI, each bound to the
fake provider through svc's bridge, each in its own worktree; three reports come back and no
process of theirs is left behind (codex-acp and Gemini leave orphans unless the whole process
group is stopped)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.agents import agent_env, throwaway_home
from harness.daemon import Daemon, migrated_home
from harness.fakes.fake_provider import FakeProvider
from harness.git import GIT
from harness.mcp import tool
from tests.e2e.test_subagents import live_pids_with

AGENTS = ["claude", "codex", "gemini"]
MODEL = "fake-model"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, FakeProvider, Daemon]]:
    with throwaway_home() as home:
        fake = FakeProvider().start()
        settings = {
            "profiles": {
                "fake-chat": {
                    "provider": "openai-chat",
                    "base_url": fake.base_url("openai-chat"),
                    "api_key": "k-fake",
                    "models": [MODEL],
                },
            },
            "integrations": {"mcp_auto_install": False},
            "skill_auto_install": False,
        }
        svc_home = migrated_home(tmp_path_factory.mktemp("real-subagents"), settings)
        daemon = Daemon(svc_home, env=agent_env(home)).start()
        try:
            yield home, fake, daemon
        finally:
            daemon.stop()
            fake.stop()


async def test_three_vendors_work_in_parallel_and_leave_nothing_running(
    world: tuple[Path, FakeProvider, Daemon],
) -> None:
    home, fake, daemon = world
    repo = home / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)
    agents = [
        {"name": agent, "agent": agent, "profile_id": "fake-chat", "task": f"[sub-{agent}] say hi"}
        for agent in AGENTS
    ]
    made = await tool(daemon, "initialize_subagents", mode="parallel", cwd=str(repo), agents=agents)
    done = await tool(daemon, "wait_for_subagents", turn_id=made["turn_id"], timeout_s=300)
    assert done["completed"], done
    for report in done["reports"]:
        agent = report["agent"]
        assert report["status"] == "done", report
        assert f"fake {MODEL}" in report["final_message"], report  # the model's answer came back
        sent = [r for r in fake.requests if f"[sub-{agent}]" in json.dumps(r.body)]
        assert sent, f"{agent} never called the model"
        # Through svc's bridge: the profile's key replaced the agent's dummy one.
        assert all(r.headers.get("authorization") == "Bearer k-fake" for r in sent)
        assert report["changes"]["branch"] == f"svc/{made['turn_id']}/{agent}"
    deadline = time.monotonic() + 30
    while alive := live_pids_with(made["turn_id"]):
        assert time.monotonic() < deadline, f"agent processes left behind: {alive}"
        time.sleep(0.2)
