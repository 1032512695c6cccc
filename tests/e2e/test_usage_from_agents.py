"""Usage attributed from a hosted agent's own traffic (issue 23, acceptance 3; contract §16): a chat
session and a subagent, each started with a profile, ask the model through the bridge URL svc put
in their environment; /api/usage then names the session and the subagent turn, with exactly the
tokens the fake provider reported and the cost the profile's prices give."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from harness.daemon import ROOT, Daemon, migrated_home
from harness.fakes.bridge_fake_plan import extract, plan
from harness.fakes.bridge_setup import bridge_settings
from harness.fakes.fake_provider import FakeProvider
from harness.mcp import tool
from harness.termclient import Chat

FAKE_ACP = str(ROOT / "harness" / "fakes" / "acp_agent.py")
PRICE = {"input": 3, "output": 15}  # USD per million tokens


def reported(fake: FakeProvider, marker: str) -> tuple[int, int]:
    """The usage the fake provider answered the request carrying `marker` with."""
    return plan(extract("openai-chat", fake.last(marker).body), "fake-model").usage


def usage(daemon: Daemon, group_by: str) -> list[dict[str, Any]]:
    answer = httpx.get(
        f"{daemon.url}/api/usage",
        params={"group_by": group_by},
        headers=daemon.owner_headers(),
        timeout=10,
    )
    answer.raise_for_status()
    return answer.json()


def until_rows(daemon: Daemon, group_by: str, key: str, wanted: set[str]) -> dict[str, Any]:
    """The request log is written in batches: poll until every wanted row is there."""
    deadline = time.monotonic() + 30
    while True:
        rows = {r[key]: r for r in usage(daemon, group_by)}
        if wanted <= set(rows):
            return rows
        assert time.monotonic() < deadline, f"no {group_by} rows for {wanted - set(rows)}"
        time.sleep(0.1)


async def ask_in_a_chat(daemon: Daemon, work: Path) -> str:
    chat = await Chat.connect(daemon)
    ready = await chat.open(agent="fake", workspace=str(work), profile_id="chat")
    await chat.send(type="prompt", session_id=ready["session_id"], text="ask usage from a chat")
    await chat.next("turn_end", timeout=30)
    await chat.close()
    return ready["session_id"]


async def ask_in_a_subagent(daemon: Daemon, work: Path) -> dict[str, Any]:
    agents = [
        {
            "name": "asker",
            "agent": "fake",
            "profile_id": "chat",
            "task": "ask usage from a subagent",
        }
    ]
    turn = await tool(daemon, "initialize_subagents", mode="parallel", cwd=str(work), agents=agents)
    await tool(daemon, "wait_for_subagents", turn_id=turn["turn_id"], timeout_s=60)
    return turn


def test_a_hosted_agents_requests_count_for_its_session_and_its_turn(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fake = FakeProvider().start()
    settings = bridge_settings(fake)
    settings["profiles"]["chat"]["prices"] = {"fake-model": PRICE}
    settings["workspaces"] = [str(work)]
    settings["agents"] = {"fake": {"acp_command": [sys.executable, FAKE_ACP], "enabled": True}}
    daemon = Daemon(migrated_home(tmp_path / "home", settings)).start()
    try:
        chat_session = asyncio.run(ask_in_a_chat(daemon, work))
        turn = asyncio.run(ask_in_a_subagent(daemon, work))
        (subagent,) = turn["subagents"]
        child_session = subagent["session_id"]

        chat_in, chat_out = reported(fake, "usage from a chat")
        sub_in, sub_out = reported(fake, "usage from a subagent")
        by_session = until_rows(daemon, "session", "session_id", {chat_session, child_session})
        for session_id, (inp, out) in (
            (chat_session, (chat_in, chat_out)),
            (child_session, (sub_in, sub_out)),
        ):
            row = by_session[session_id]
            assert (row["requests"], row["input_tokens"], row["output_tokens"]) == (1, inp, out)
            assert row["cost_usd"] == round((inp * PRICE["input"] + out * PRICE["output"]) / 1e6, 6)
        by_turn = until_rows(daemon, "turn", "turn_id", {turn["turn_id"]})
        assert (
            by_turn[turn["turn_id"]]["input_tokens"],
            by_turn[turn["turn_id"]]["output_tokens"],
        ) == (
            sub_in,
            sub_out,
        )
        assert list(by_turn) == [turn["turn_id"]]  # the chat's request belongs to no turn
    finally:
        daemon.stop()
        fake.stop()
