"""How a chat goes on after a reboot, whichever way its agent offers (contract §17 "Resume"):
`session/resume` before `session/load`, a replay dropped even when it comes after the agent's
answer, and — for an agent that offers neither, or lost its session — a new ACP session primed
with svc's summary of the history, which the history says.

One live svc hosts a chat with each variant of the scripted agent (harness/fakes/acp_agent.py,
which keeps its sessions on disk with `--state`), runs a turn in each, and "reboots": svc, the
holder and every agent die by SIGKILL (harness/reboot.py). svc starts again on the same
home and each chat is resumed over /ws/chat.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.daemon import Daemon, migrated_home
from harness.reboot import simulate_reboot
from harness.termclient import FAKE_ACP, Chat, get_session, hosting_settings

# agent name → the scripted agent's options (each keeps its sessions in its own folder)
VARIANTS = {
    "resumer": ["--resume"],  # offers session/resume and session/load
    "loader": [],  # session/load only: replays before answering
    "late": ["--replay-late"],  # session/load only: answers, then replays (as Gemini CLI does)
    "neither": ["--no-load"],  # neither: a new session and svc's summary
    "forgetful": ["--resume"],  # offers both, but its sessions are gone by the resume
}
FIRST = "echo alpha bravo"


@dataclass
class World:
    daemon: Daemon
    workspace: Path
    chats: dict[str, str]  # agent → session id
    before: dict[str, list[dict[str, Any]]]  # agent → its history before the reboot
    agent_ids: dict[str, str]  # agent → its ACP session id before the reboot


def agent(state: Path, options: list[str]) -> dict[str, Any]:
    argv = [sys.executable, FAKE_ACP, *options, "--state", str(state)]
    return {"command": argv, "acp_command": argv, "enabled": True}


async def history(daemon: Daemon, sid: str) -> list[dict[str, Any]]:
    chat = await Chat.connect(daemon)
    try:
        await chat.open(session_id=sid)
        return [
            {k: v for k, v in e.items() if k != "replay"} for e in chat.events if e.get("replay")
        ]
    finally:
        await chat.close()


async def first_turns(daemon: Daemon, workspace: Path) -> tuple[dict, dict, dict]:
    chats, before, agent_ids = {}, {}, {}
    for name in VARIANTS:
        chat = await Chat.connect(daemon)
        ready = await chat.open(agent=name, workspace=str(workspace))
        sid = chats[name] = ready["session_id"]
        await chat.send(type="prompt", session_id=sid, text=FIRST)
        await chat.next("turn_end")
        await chat.close()
        before[name] = await history(daemon, sid)
        agent_ids[name] = get_session(daemon, sid)["agent_session_id"]
    return chats, before, agent_ids


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("resume-ways")
    workspace = tmp / "work"
    workspace.mkdir()
    settings = hosting_settings()
    settings["agents"] = {name: agent(tmp / name, opts) for name, opts in VARIANTS.items()}
    settings["workspaces"] = [str(workspace)]
    settings["host"] = {"resume_on_start": False}  # each test resumes its chat itself
    daemon = Daemon(migrated_home(tmp / "home", settings)).start()
    try:
        chats, before, agent_ids = asyncio.run(first_turns(daemon, workspace))
        simulate_reboot(daemon, chats.values())
        shutil.rmtree(tmp / "forgetful")  # its sessions did not survive the reboot
        daemon.start()
        yield World(daemon, workspace, chats, before, agent_ids)
    finally:
        daemon.stop()


async def resume(world: World, name: str) -> tuple[Chat, dict[str, Any], dict[str, Any]]:
    """The chat resumed over /ws/chat: (its client, the `session` event, the `resumed` one)."""
    sid = world.chats[name]
    chat = await Chat.connect(world.daemon)
    ready = await chat.open(session_id=sid, resume=True, timeout=30)
    assert ready["status"] == "running", chat.events
    resumed = [e for e in chat.events if e["kind"] == "resumed"]
    assert len(resumed) == 1, chat.events
    return chat, ready, resumed[0]


async def ask(chat: Chat, sid: str, text: str) -> str:
    """One prompt; what the agent said in its turn."""
    start = len(chat.events)
    await chat.send(type="prompt", session_id=sid, text=text)
    await chat.next("turn_end", timeout=20)
    return "".join(
        e.get("text", "") for e in chat.events[start:] if e["kind"] == "agent_message_chunk"
    )


def assert_first_turn_once(world: World, name: str, after: list[dict[str, Any]]) -> None:
    before = world.before[name]
    assert after[: len(before)] == before  # as it was, and not stored a second time
    later = after[len(before) :]
    assert FIRST not in [e.get("text") for e in later], later
    assert [e["seq"] for e in after] == list(range(1, len(after) + 1))


async def test_an_agent_that_offers_session_resume_continues_its_own_session(world: World) -> None:
    chat, ready, resumed = await resume(world, "resumer")
    try:
        assert resumed["way"] == "session/resume" and not resumed["tried"], resumed
        assert resumed["message"] == "resumed: the agent continued its own session (session/resume)"
        assert ready["agent_session_id"] == world.agent_ids["resumer"]
        # The agent remembers: its own record of the session holds the first prompt.
        assert json.loads(await ask(chat, world.chats["resumer"], "prompts")) == [FIRST, "prompts"]
    finally:
        await chat.close()
    assert_first_turn_once(world, "resumer", await history(world.daemon, world.chats["resumer"]))


@pytest.mark.parametrize("name", ["loader", "late"])
async def test_a_loaded_session_is_replayed_by_the_agent_and_stored_once(
    world: World, name: str
) -> None:
    chat, ready, resumed = await resume(world, name)
    try:
        assert resumed["way"] == "session/load", resumed
        assert ready["agent_session_id"] == world.agent_ids[name]
        assert json.loads(await ask(chat, world.chats[name], "prompts")) == [FIRST, "prompts"]
    finally:
        await chat.close()
    # The agent replayed "echo alpha bravo" and its answer ("late": after answering the load);
    # svc dropped every replayed update.
    after = await history(world.daemon, world.chats[name])
    assert_first_turn_once(world, name, after)
    assert [e["text"] for e in after if e["kind"] == "agent_message_chunk"][:3] == [
        "alpha",
        " bravo",
        '["echo alpha bravo", "prompts"]',
    ]


async def test_an_agent_that_offers_neither_gets_svcs_summary_and_the_chat_says_so(
    world: World,
) -> None:
    sid = world.chats["neither"]
    chat, ready, resumed = await resume(world, "neither")
    try:
        assert resumed["way"] == "summary" and resumed["primed"], resumed
        assert resumed["message"] == (
            "resumed in a new agent session: the agent offers neither session/resume nor "
            "session/load, so svc gives it a summary of this chat with the next prompt"
        )
        assert ready["agent_session_id"] != world.agent_ids["neither"]  # a new ACP session
        received = json.loads(await ask(chat, sid, "prompts"))
        # The new session's first prompt: svc's summary of the chat, then the person's words.
        assert len(received) == 1
        assert received[0] == (
            "[svc] This chat was interrupted and its agent could not continue its own session, "
            "so this is a new one. The conversation so far, as svc recorded it:\n\n"
            "[user]\necho alpha bravo\n\n[assistant]\nalpha bravo\n\n[user, now]\nprompts"
        )
        # Once: the next prompt is the person's alone.
        assert json.loads(await ask(chat, sid, "prompts"))[1] == "prompts"
    finally:
        await chat.close()
    after = await history(world.daemon, sid)
    assert_first_turn_once(world, "neither", after)
    # svc's history holds what the person typed, not the primed prompt the agent got.
    prompts = [e["text"] for e in after if e["kind"] == "user_message_chunk"]
    assert prompts == [FIRST, "prompts", "prompts"]


async def test_an_agent_that_lost_its_session_gets_the_summary_and_says_why(world: World) -> None:
    sid = world.chats["forgetful"]
    chat, _, resumed = await resume(world, "forgetful")
    try:
        assert resumed["way"] == "summary", resumed
        # Both of its own ways were tried, best first, and their errors are said.
        assert [t.split(":")[0] for t in resumed["tried"]] == ["session/resume", "session/load"]
        assert "Resource not found" in resumed["tried"][0], resumed
        assert resumed["message"].startswith(
            "resumed in a new agent session: the agent could not continue its own (session/resume:"
        )
        received = json.loads(await ask(chat, sid, "prompts"))
        assert "[user]\necho alpha bravo" in received[0] and received[0].endswith("prompts")
    finally:
        await chat.close()
