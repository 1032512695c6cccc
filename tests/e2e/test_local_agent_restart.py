"""Agent-as-API conversations go on after svc restarts (contract §6, §17 "Resume"): the `openai`
SDK against /svc/local-agent with one `X-Svc-Conversation`, svc stopped in between — SIGTERM
(the holder keeps the agent), or SIGKILL with every agent process killed too (a reboot) — and
the next request continues the same session: the scripted agent shows the earlier turn.

The scripted agent (harness/fakes/acp_agent.py) keeps its sessions on disk (`--state`), as real
agents do, and answers `prompts` with every prompt its session has received.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from harness.daemon import Daemon, migrated_home
from harness.fakes.bridge_setup import bridge_settings
from harness.fakes.fake_provider import FakeProvider
from harness.reboot import simulate_reboot
from harness.termclient import FAKE_ACP

VARIANTS = {"loader": [], "resumer": ["--resume"], "neither": ["--no-load"]}


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Daemon]:
    fake = FakeProvider().start()
    work = tmp_path / "work"
    work.mkdir()
    agents = {
        name: {
            "acp_command": [sys.executable, FAKE_ACP, *options, "--state", str(tmp_path / name)],
            "enabled": True,
        }
        for name, options in VARIANTS.items()
    }
    settings = {
        **bridge_settings(fake),
        "workspaces": [str(work.resolve())],
        "agents": agents,
        "local_agent_api": {"enabled": True, "agents": list(VARIANTS)},
    }
    daemon = Daemon(migrated_home(tmp_path / "home", settings))
    try:
        yield daemon.start()
    finally:
        daemon.stop()
        fake.stop()


def client(daemon: Daemon, agent: str, conversation: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{daemon.url}/svc/local-agent/{agent}/chat/v1",
        api_key="x",
        max_retries=0,
        timeout=60,
        default_headers={"X-Svc-Conversation": conversation},
    )


def say(c: openai.OpenAI, agent: str, messages: list[dict[str, str]]) -> str:
    answer = c.chat.completions.create(model=agent, messages=messages)  # type: ignore[arg-type]
    return answer.choices[0].message.content or ""


def api_session(daemon: Daemon, agent: str) -> dict[str, Any]:
    listed = httpx.get(f"{daemon.url}/api/sessions", headers=daemon.owner_headers()).json()
    (session,) = [s for s in listed if s["kind"] == "api" and s["agent"] == agent]
    return session


FIRST = [{"role": "user", "content": "echo one two"}]
RESENT = [
    *FIRST,
    {"role": "assistant", "content": "one two"},
    {"role": "user", "content": "prompts"},
]


@pytest.mark.parametrize("agent", ["loader", "resumer"])
def test_a_conversation_goes_on_after_svc_is_stopped_and_started(svc: Daemon, agent: str) -> None:
    c = client(svc, agent, f"sigterm-{agent}")
    assert say(c, agent, FIRST) == "one two"
    before = api_session(svc, agent)
    svc.stop(keep_sessions=True)  # SIGTERM: host.on_exit "keep" leaves the agent to its holder
    svc.start()
    # The same agent session, which got only the new tail: it heard the first turn itself.
    assert json.loads(say(c, agent, RESENT)) == ["echo one two", "prompts"]
    after = api_session(svc, agent)
    assert after["id"] == before["id"] and after["status"] == "running"
    assert after["agent_session_id"] == before["agent_session_id"]


@pytest.mark.parametrize("agent", ["loader", "resumer"])
def test_a_conversation_goes_on_after_a_reboot(svc: Daemon, agent: str) -> None:
    c = client(svc, agent, f"reboot-{agent}")
    assert say(c, agent, FIRST) == "one two"
    before = api_session(svc, agent)
    simulate_reboot(svc, [before["id"]])  # svc, its holder and the agent: SIGKILL
    svc.start()
    # A new agent process that continued its own session (session/load, session/resume): it
    # knows the first prompt from its own records, and svc sent it only the new tail.
    assert json.loads(say(c, agent, RESENT)) == ["echo one two", "prompts"]
    after = api_session(svc, agent)
    assert after["id"] == before["id"] and after["status"] == "running"
    assert after["agent_session_id"] == before["agent_session_id"]
    assert after["pid"] != before["pid"]


def test_an_agent_that_cannot_continue_hears_the_conversation_once(svc: Daemon) -> None:
    """An agent offering neither way starts a new ACP session: a client that resends the
    conversation is its context, and svc does not add its own summary as well."""
    c = client(svc, "neither", "reboot-neither")
    assert say(c, "neither", FIRST) == "one two"
    simulate_reboot(svc, [api_session(svc, "neither")["id"]])
    svc.start()
    (received,) = json.loads(say(c, "neither", RESENT))
    # (The agent-as-API's own context for a new session, docs/agent-api.md.)
    assert received == "[user]\necho one two\n\n[assistant]\none two\n\n[user, now]\n\nprompts"


def test_a_client_that_sends_only_the_new_message_gets_svcs_summary(svc: Daemon) -> None:
    """Leaning on X-Svc-Conversation alone (only the newest message sent): after a reboot an
    agent offering neither way gets svc's summary of the session's history."""
    c = client(svc, "neither", "tail-only")
    assert say(c, "neither", FIRST) == "one two"
    simulate_reboot(svc, [api_session(svc, "neither")["id"]])
    svc.start()
    (received,) = json.loads(say(c, "neither", [{"role": "user", "content": "prompts"}]))
    assert received.startswith("[svc] This chat was interrupted")
    assert received.endswith("[user]\necho one two\n\n[assistant]\none two\n\n[user, now]\nprompts")
