"""A reboot does not lose a chat with a real agent CLI (contract §17 "Resume", issue 33
acceptance 2).

One svc hosts a chat with each of Gemini CLI, Qwen Code, OpenCode, Codex (codex-acp) and Claude
(claude-agent-acp), each bound to a profile on the fake provider, and runs one turn that asks it
to remember a word. Then the machine "reboots": svc, every agent and everything they started die
by SIGKILL at once (harness/reboot.py); the disk stays. svc starts again on the same
$SVC_HOME; each chat has ended (interrupted), is resumed over /ws/chat and asked for the word;
then a second reboot, a second resume, the same question. Each time the agent must continue its
own ACP session — `session/resume` where it offers it, else `session/load` — and the model
request for the question (what the fake provider received) must carry the word: the agent
remembers. svc's history holds the first turn once, whatever the agent replayed.

What each CLI offered and did is recorded in docs/agents.md ("Resume after a reboot"); Gemini CLI
loses its session (an xfail with the reason) and its chat goes on with svc's summary.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.agents import agent_env, throwaway_home
from harness.daemon import Daemon, migrated_home
from harness.fakes.fake_provider import FakeProvider
from harness.real_agents import OWN_PROFILE, chat_turn, requests_with, run_turn, settings
from harness.reboot import simulate_reboot
from harness.termclient import Chat, stop_session

# The module's fixture runs five CLIs' first turns, a reboot and a restart before the first test.
pytestmark = pytest.mark.timeout(600)

AGENTS = ["gemini", "qwen", "opencode", "codex", "claude"]
# What each CLI's `initialize` offers (checked below), so the way svc must take is known.
EXPECTED_WAY = {
    "gemini": "session/load",  # loadSession only
    "qwen": "session/resume",  # loadSession and sessionCapabilities.resume
    "opencode": "session/resume",
    "codex": "session/resume",
    "claude": "session/resume",
}


# The events that make up the conversation (and the resume), as opposed to the agent's news.
CONVERSATION = {
    "resumed",
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "turn_end",
}


def word(agent: str) -> str:
    return f"quokka-{agent}-4711"


@dataclass
class Before:
    """A chat as it was when the machine went down."""

    session_id: str = ""
    agent_session_id: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)
    failure: str = ""  # why the first turn could not be had


@dataclass
class World:
    home: Path
    workspace: Path
    fake: FakeProvider
    daemon: Daemon
    before: dict[str, Before]
    killed: int


def session_row(daemon: Daemon, sid: str) -> dict[str, Any]:
    response = httpx.get(f"{daemon.url}/api/sessions/{sid}", headers=daemon.owner_headers())
    assert response.status_code == 200, response.text
    return response.json()


def ended_row(daemon: Daemon, sid: str, timeout: float = 10) -> dict[str, Any]:
    """The session's row once start-up has found its process gone (it runs right after bind)."""
    deadline = time.monotonic() + timeout
    while (row := session_row(daemon, sid))["status"] in ("starting", "running"):
        assert time.monotonic() < deadline, f"still {row['status']} {timeout} s after start: {row}"
        time.sleep(0.1)
    return row


async def history(daemon: Daemon, sid: str) -> list[dict[str, Any]]:
    """The stored events, as a client opening the chat gets them replayed."""
    chat = await Chat.connect(daemon)
    try:
        await chat.open(session_id=sid)
        return [strip(e) for e in chat.events if e.get("replay")]
    finally:
        await chat.close()


def strip(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k != "replay"}


async def first_turns(daemon: Daemon, workspace: Path, agents: list[str]) -> dict[str, Before]:
    before: dict[str, Before] = {}
    for agent in agents:
        kept = before[agent] = Before()
        try:
            chat, kept.session_id = await chat_turn(
                daemon,
                workspace,
                agent,
                OWN_PROFILE[agent],
                f"Please remember the word {word(agent)}; I will ask for it later.",
            )
            await chat.close()
        except Exception as exc:  # one CLI failing must not hide what the others do
            kept.failure = f"{type(exc).__name__}: {exc}"
            continue
        kept.agent_session_id = session_row(daemon, kept.session_id)["agent_session_id"]
        kept.history = await history(daemon, kept.session_id)
    return before


def own_record_written(home: Path, agent: str, agent_session_id: str, text: str) -> None:
    """Claude Code writes its session's transcript (~/.claude/projects/*/<id>.jsonl) a moment
    after the turn has ended: a reboot within that moment loses the session (seen once in CI,
    'Resource not found' on session/resume), one a second later keeps it. The reboot here comes
    once the agent's own record holds `text`, as a person's would; after 30 s it comes anyway and
    the test shows what the agent then does."""
    if agent != "claude" or not agent_session_id:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for record in (home / ".claude" / "projects").glob(f"*/{agent_session_id}.jsonl"):
            if text in record.read_text(errors="replace"):
                return
        time.sleep(0.1)


def start_world(home: Path, tmp: Path, agents: list[str]) -> World:
    workspace = home / "work"
    workspace.mkdir()
    fake = FakeProvider().start()
    # The test resumes each chat itself, over /ws/chat (resume_on_start has its own tests).
    resuming = {"host": {"resume_on_start": False}}
    svc_home = migrated_home(tmp, {**settings(fake, workspace), **resuming})
    daemon = Daemon(svc_home, env=agent_env(home)).start()
    before = asyncio.run(first_turns(daemon, workspace, agents))
    for agent, kept in before.items():
        own_record_written(home, agent, kept.agent_session_id, word(agent))
    killed = simulate_reboot(daemon, [b.session_id for b in before.values() if b.session_id])
    daemon.start()
    return World(home, workspace, fake, daemon, before, killed)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with throwaway_home() as home:
        made = start_world(home, tmp_path_factory.mktemp("resume"), AGENTS)
        try:
            yield made
        finally:
            made.daemon.stop()
            made.fake.stop()


def test_the_reboot_killed_svc_and_every_agent(world: World) -> None:
    # The daemon, and at least one process per agent (codex-acp and Gemini CLI start more).
    ran = [b for b in world.before.values() if b.session_id]
    assert world.killed >= 1 + len(ran), world.killed
    for agent, kept in world.before.items():
        assert not kept.failure, f"{agent}'s first turn failed: {kept.failure}"


class LostSession(AssertionError):
    """The agent could not continue its own session: svc went on with its summary."""


async def resume_and_ask(
    world: World, agent: str, sid: str, asked: str, times: int
) -> dict[str, Any]:
    """Resume the ended chat (for the `times`th time) over /ws/chat and run one prompt; returns
    the `resumed` event, once the model request for the prompt carried the first turn's word."""
    ended = ended_row(world.daemon, sid)
    # The holder went with the machine: start-up finds the process gone, not stopped by svc.
    assert ended["end_reason"] == "interrupted", ended
    chat = await Chat.connect(world.daemon)
    try:
        ready = await chat.open(session_id=sid, resume=True, timeout=90)
        assert ready["status"] == "running", (ready, chat.events)
        # The history so far, replayed: it ends with the `resumed` event of this resume.
        resumed = [e for e in chat.events if e["kind"] == "resumed"]
        assert len(resumed) == times, chat.events
        await run_turn(chat, sid, asked, timeout=180)
    finally:
        await chat.close()
    marker = asked[asked.index("[") :]
    sent = requests_with(world.fake, marker)
    assert sent, f"{agent} sent nothing to the fake provider for {marker}"
    carried = [r for r in sent if word(agent) in json.dumps(r.body)]
    # Either way (its own session, or svc's summary), the model must hear the earlier turn.
    assert carried, f"{agent}'s request for {marker} lacks the first turn: {sent[-1].body}"
    return {**resumed[-1], "agent_session_id_now": ready["agent_session_id"]}


async def two_reboots(world: World, agent: str) -> list[dict[str, Any]]:
    """Resume after the module's reboot and ask; reboot again, resume and ask again. Checks
    svc's history and returns the two `resumed` events."""
    kept = world.before[agent]
    assert not kept.failure, f"{agent}'s first turn failed: {kept.failure}"
    sid = kept.session_id
    asked = [f"Which word did I ask you to remember? [{agent}-{n}]" for n in ("second", "third")]
    first = await resume_and_ask(world, agent, sid, asked[0], 1)
    marker = asked[0][asked[0].index("[") :]
    own_record_written(world.home, agent, first["agent_session_id_now"], marker)
    simulate_reboot(world.daemon, [sid])
    world.daemon.start()
    second = await resume_and_ask(world, agent, sid, asked[1], 2)

    # svc's history: the first turn exactly as before the reboot, once; then each resume and
    # its turn — nothing an agent replayed while loading was stored again.
    after = await history(world.daemon, sid)
    assert after[: len(kept.history)] == kept.history
    # (An agent may announce its commands again for a resumed session: that is news.)
    later = [e["kind"] for e in after[len(kept.history) :] if e["kind"] in CONVERSATION]
    assert later.count("resumed") == 2 and later[:2] == ["resumed", "user_message_chunk"], later
    prompts = [e["text"] for e in after if e["kind"] == "user_message_chunk"]
    assert prompts == [prompts[0], *asked] and word(agent) in prompts[0]
    assert sum(e["kind"] == "turn_end" for e in after) == 3
    assert [e["seq"] for e in after] == list(range(1, len(after) + 1))
    stop_session(world.daemon, sid)
    return [first, second]


# Gemini CLI 0.61.0 offers session/load and svc calls it, but the CLI loses the session: svc
# goes on with its summary (the model still hears the earlier turn, checked before this).
GEMINI_LOSES_ITS_SESSION = pytest.mark.xfail(
    raises=LostSession,
    strict=False,  # a race inside Gemini CLI: now and then its load succeeds
    reason=(
        "Gemini CLI 0.61.0 answers svc's session/load after a restart with -32603 'No previous "
        "sessions found for this project.' in most runs, though the session's file is in "
        "~/.gemini/tmp/<project>/chats (the same files and environment load in most direct "
        "runs, and under strace: a race at its start not pinned down); and a session it did "
        "load is deleted at its next start: the load writes a second, empty "
        "session-<time>-<id8>.jsonl, and the session cleanup each start runs "
        "(general.sessionRetention, on by default) deletes every file of a short id that has "
        "an empty one. See docs/agents.md, 'Resume after a reboot'."
    ),
)


@pytest.mark.parametrize(
    "agent",
    [pytest.param(a, marks=GEMINI_LOSES_ITS_SESSION) if a == "gemini" else a for a in AGENTS],
)
async def test_a_real_agent_resumes_its_chat_after_two_reboots(world: World, agent: str) -> None:
    resumed = await two_reboots(world, agent)
    lost = [e["message"] for e in resumed if e["way"] == "summary"]
    if lost:
        raise LostSession("; ".join(lost))
    for event in resumed:
        assert event["way"] == EXPECTED_WAY[agent], event["message"]
        # The same ACP session, both times.
        assert event["agent_session_id_now"] == world.before[agent].agent_session_id
