"""The agent-as-API with the real agent CLIs (issue 10, acceptance 5): for each of Gemini CLI,
Qwen Code, OpenCode, Codex (codex-acp) and Claude (claude-agent-acp), svc's built-in entry binds
the agent's model traffic to the session's profile; a streamed `/svc/local-agent/<agent>/<profile>`
request is answered; the fake provider saw the agent's own model call arrive through svc's bridge,
in the agent's dialect translated to the profile's provider (OpenAI Chat here)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from harness.agents import agent_env, processes_in, throwaway_home
from harness.daemon import Daemon, migrated_home
from harness.fakes.fake_provider import FakeProvider

AGENTS = ["gemini", "qwen", "opencode", "codex", "claude"]
MODEL = "fake-model"


@dataclass
class World:
    home: Path
    fake: FakeProvider
    daemon: Daemon


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with throwaway_home() as home:
        workspace = home / "work"
        workspace.mkdir()
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
            "workspaces": [str(workspace)],
            "local_agent_api": {"enabled": True, "agents": AGENTS},
            "integrations": {"mcp_auto_install": False},
            "skill_auto_install": False,
        }
        svc_home = migrated_home(tmp_path_factory.mktemp("agents-api"), settings)
        daemon = Daemon(svc_home, env=agent_env(home)).start()
        try:
            yield World(home, fake, daemon)
        finally:
            daemon.stop()
            fake.stop()


def requests_with(fake: FakeProvider, marker: str) -> list[Any]:
    return [r for r in fake.requests if marker in json.dumps(r.body)]


@pytest.mark.parametrize("agent", AGENTS)
def test_a_real_agent_answers_a_streamed_request_on_its_profile(world: World, agent: str) -> None:
    client = openai.OpenAI(
        base_url=f"{world.daemon.url}/svc/local-agent/{agent}/fake-chat/v1",
        api_key="unused",
        max_retries=0,
        timeout=180,
        default_headers={"X-Svc-Permission-Mode": "allow"},
    )
    marker = f"[api-{agent}] say hello"
    chunks = client.chat.completions.create(
        model=agent, stream=True, messages=[{"role": "user", "content": marker}]
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    sent = requests_with(world.fake, marker)
    assert sent, f"{agent} never called the model (answer: {text[:500]!r})"
    # The profile's key: svc's bridge swapped the agent's dummy key for it, and translated the
    # agent's own dialect to the profile's provider, OpenAI Chat.
    assert all(r.headers.get("authorization") == "Bearer k-fake" for r in sent)
    assert all(r.path == "/v1/chat/completions" for r in sent)
    assert f"fake {MODEL}" in text, text[:1000]  # the model's answer came back through the agent


def _of_one_shot(pid: int, agent: str) -> bool:
    try:
        return f"SVC_AGENT={agent}".encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def test_no_agent_process_is_left_behind(world: World) -> None:
    import time

    deadline = time.monotonic() + 30
    while alive := [p for p in processes_in(world.home) if any(_of_one_shot(p, a) for a in AGENTS)]:
        assert time.monotonic() < deadline, f"agent processes left behind: {alive}"
        time.sleep(0.2)
