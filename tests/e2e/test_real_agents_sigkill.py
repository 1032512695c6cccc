"""svc SIGKILLed while each of the five real agent CLIs is in the middle of a turn (contract §17,
issue 42 acceptance): the holder keeps them, the next svc takes them back, and each turn ends
once in svc's history — however the agent took losing its model stream, which goes through svc's
bridge and breaks with svc (seen: a retry once svc is back, ending `end_turn`; or Gemini CLI's
turn failing "terminated") — and the chat goes on with the next prompt.

One svc hosts a chat with each of Claude (claude-agent-acp), Codex (codex-acp), Gemini CLI,
OpenCode and Qwen Code, each bound to a profile on the fake provider, and prompts all five with
a marker that makes the provider stream slowly (`[slow]`: 10 s). Once every agent has streamed
some of its answer, svc is SIGKILLed; it comes back a few seconds later on the same port, and a
tab left open reopens the five chats the moment the port accepts (tests/e2e/
test_turns_while_away.py has the window this is).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.agents import agent_env, throwaway_home
from harness.daemon import Daemon, migrated_home
from harness.fakes.fake_provider import FakeProvider
from harness.real_agents import OWN_PROFILE, requests_with, run_turn, settings
from harness.termclient import Chat

pytestmark = pytest.mark.timeout(900)

AGENTS = ["claude", "codex", "gemini", "opencode", "qwen"]
AWAY_S = 3.0  # svc is down this long: the agents find their model stream cut


@dataclass
class Run:
    """One agent's chat through the kill."""

    session_id: str = ""
    streamed: int = 0  # answer chunks svc had shown before it was killed
    ended_before_kill: bool = False
    failure: str = ""  # why it could not even start
    after: list[dict[str, Any]] = field(default_factory=list)  # the history once svc is back


@dataclass
class World:
    daemon: Daemon
    fake: FakeProvider
    runs: dict[str, Run]


async def first_words(chat: Chat, run: Run, timeout: float = 180) -> None:
    """Until the agent has streamed part of its answer (or ended its turn already)."""
    async with asyncio.timeout(timeout):
        while True:
            event = json.loads(await chat.ws.recv())
            chat.events.append(event)
            if event["kind"] == "agent_message_chunk":
                run.streamed += 1
                if run.streamed >= 3:
                    return
            if event["kind"] == "turn_end":
                run.ended_before_kill = True
                return


async def begin(daemon: Daemon, workspace: Path, agent: str) -> tuple[Run, Chat | None]:
    run = Run()
    try:
        chat = await Chat.connect(daemon)
        ready = await chat.open(
            timeout=90, agent=agent, workspace=str(workspace), profile_id=OWN_PROFILE[agent]
        )
        assert ready.get("status") == "running", ready
        run.session_id = ready["session_id"]
    except Exception as exc:  # one CLI failing must not hide what the others do
        run.failure = f"{type(exc).__name__}: {exc}"
        return run, None
    return run, chat


async def through_the_kill(daemon: Daemon, workspace: Path) -> dict[str, Run]:
    # One at a time: five CLIs starting at once on a busy machine outlast svc's start timeout.
    started = [await begin(daemon, workspace, agent) for agent in AGENTS]
    runs = dict(zip(AGENTS, (run for run, _ in started), strict=True))
    chats = {a: chat for a, (_, chat) in zip(AGENTS, started, strict=True) if chat is not None}
    for agent, chat in chats.items():
        text = f"Write me a long line of dots, please. [slow] [{agent}-first]"
        await chat.send(type="prompt", session_id=runs[agent].session_id, text=text)
    await asyncio.gather(
        *(first_words(chat, runs[a]) for a, chat in chats.items()), return_exceptions=True
    )
    daemon.kill()  # mid-turn for every agent that streams: its model stream breaks with svc
    await asyncio.sleep(AWAY_S)
    sids = {runs[a].session_id: a for a in chats}
    tab = await back_with_a_tab_open(daemon, list(sids))
    try:
        ended = await first_turns_ended(tab, set(sids))
    finally:
        await tab.close()
    for sid, agent in sids.items():
        runs[agent].after = await went_on(daemon, agent, sid, ended.get(sid, ""))
    return runs


async def back_with_a_tab_open(daemon: Daemon, session_ids: list[str]) -> Chat:
    """Start svc again and, the moment its port accepts a socket, reopen every chat on it — what
    a dashboard tab left open does when it reconnects — while svc is still starting."""
    starting = asyncio.ensure_future(asyncio.to_thread(daemon.start))
    async with asyncio.timeout(60):
        while True:
            try:
                tab = await Chat.connect(daemon)
                break
            except OSError:
                await asyncio.sleep(0.01)
    for session_id in session_ids:
        await tab.send(type="open", session_id=session_id)
    await starting
    return tab


async def first_turns_ended(tab: Chat, waiting: set[str], timeout: float = 240) -> dict[str, str]:
    """Each chat's first turn end on the reopened tab (replayed or live), or why it is missing."""
    why: dict[str, str] = {}
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while waiting:
                event = json.loads(await tab.ws.recv())
                tab.events.append(event)
                sid = event.get("session_id")
                if event["kind"] == "session" and event.get("status") != "running":
                    why[sid] = f"reopened as {event.get('status')}"
                    waiting.discard(sid)
                elif event["kind"] == "turn_end":
                    waiting.discard(sid)
    return why | {sid: "no turn end on the tab" for sid in waiting}


async def went_on(daemon: Daemon, agent: str, session_id: str, why: str) -> list[dict[str, Any]]:
    """A second turn, then the history; `why` the first turn's end did not reach the tab."""
    if why:
        return [{"kind": "test_failure", "message": why}]
    chat = await Chat.connect(daemon)
    try:
        await chat.open(session_id=session_id, timeout=60)
        await run_turn(chat, session_id, f"Reply with one word. [{agent}-second]", timeout=240)
    except Exception as exc:
        return [{"kind": "test_failure", "message": f"{type(exc).__name__}: {exc}"}]
    finally:
        await chat.close()
    again = await Chat.connect(daemon)
    try:
        await again.open(session_id=session_id)
        await asyncio.sleep(1)  # the replay follows `session`
        while True:
            try:
                await again.next("__none__", timeout=0.5)
            except TimeoutError:
                break
        return [e for e in again.events if e.get("replay")]
    finally:
        await again.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with throwaway_home() as home:
        workspace = home / "work"
        workspace.mkdir()
        fake = FakeProvider().start()
        svc_home = migrated_home(tmp_path_factory.mktemp("sigkill"), settings(fake, workspace))
        daemon = Daemon(svc_home, env=agent_env(home)).start()
        try:
            yield World(daemon, fake, asyncio.run(through_the_kill(daemon, workspace)))
        finally:
            daemon.stop()
            fake.stop()


@pytest.mark.parametrize("agent", AGENTS)
def test_a_real_agents_turn_through_a_sigkill_ends_once_and_the_chat_goes_on(
    world: World, agent: str
) -> None:
    run = world.runs[agent]
    assert not run.failure, f"{agent} did not start: {run.failure}"
    summary = [(e["kind"], e.get("stop_reason") or e.get("message")) for e in run.after]
    # How the agent took it (-s shows it): the model requests it made for the first prompt
    # (a retry once svc's bridge was back), and how that turn ended.
    asked = requests_with(world.fake, f"[{agent}-first]")
    print(agent, run.streamed, len(asked), [s for s in summary if s[1]])
    assert run.streamed and not run.ended_before_kill, f"{agent} was not mid-turn at the kill"
    failures = [e["message"] for e in run.after if e["kind"] == "test_failure"]
    assert not failures, f"{agent}: {failures[0]}"
    kinds = [e["kind"] for e in run.after]
    prompts = [e["text"] for e in run.after if e["kind"] == "user_message_chunk"]
    assert len(prompts) == 2 and "first" in prompts[0] and "second" in prompts[1], prompts
    ends = [e for e in run.after if e["kind"] == "turn_end"]
    assert len(ends) == 2, kinds  # each turn ends once, whatever the kill did to the first
    second = [i for i, kind in enumerate(kinds) if kind == "user_message_chunk"][1]
    assert kinds.index("turn_end") < second  # the first turn ended before the second began
    assert ends[1]["stop_reason"] == "end_turn", run.after[-5:]  # the chat went on
    seqs = [e["seq"] for e in run.after]
    assert seqs == list(range(1, len(seqs) + 1))  # nothing stored twice, nothing skipped
