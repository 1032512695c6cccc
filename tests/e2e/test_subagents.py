"""Subagent turns end to end (issue 11) with the scripted ACP agent: a live daemon, the `mcp`
SDK's client against /mcp (as an agent's injected entry calls it), real git repositories."""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.daemon import Daemon, migrated_home
from harness.git import feature_repo, git
from harness.mcp import mcp_client, tool
from harness.termclient import Chat, hosting_settings, open_ws, shell_env


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-subagents")
    settings = hosting_settings()
    settings["agents"]["broken"] = {
        "command": ["false"],
        "acp_command": [sys.executable, "-c", "import sys; sys.exit(7)"],
        "enabled": True,
    }
    server = Daemon(migrated_home(tmp, settings), env=shell_env(tmp)).start()
    yield server
    server.stop()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A clean repository whose HEAD is a feature branch one commit ahead of main."""
    return feature_repo(tmp_path / "repo")


async def tool_error(daemon: Daemon, name: str, **arguments: Any) -> str:
    async with mcp_client(daemon) as client:
        result = await client.call_tool(name, arguments)
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)


def when(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def turn(daemon: Daemon, turn_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{daemon.url}/api/subagent-turns/{turn_id}", headers=daemon.owner_headers())
    assert answer.status_code == 200, answer.text
    return answer.json()


def live_pids_with(marker: str) -> list[int]:
    """Processes whose environment names `marker` (a turn id): the subagents' agents."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker.encode() in (proc / "environ").read_bytes():
                    state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state != "Z":
                        found.append(int(proc.name))
            except OSError:
                continue
    return found


async def test_parallel_runs_at_once_in_worktrees_from_head_and_measures_the_changes(
    daemon: Daemon, repo: Path
) -> None:
    runtime = await open_ws(daemon, "/ws/agents/runtime")
    task = 'sleep 2 ; commit {name}.txt {lines} ; report {{"summary": "{name} wrote {lines}"}}'
    agents = [
        {"name": name, "agent": "fake", "task": task.format(name=name, lines=lines)}
        for name, lines in (("a", 3), ("b", 5), ("c", 8))
    ]
    agents[0]["task"] = "env ; " + agents[0]["task"]
    started = time.monotonic()
    made = await tool(daemon, "initialize_subagents", mode="parallel", cwd=str(repo), agents=agents)
    assert [s["status"] for s in made["subagents"]] == ["pending"] * 3  # returned at once
    # Each subagent's session exists from the answer on: the caller can follow it at once.
    for member in made["subagents"]:
        found = httpx.get(
            f"{daemon.url}/api/sessions/{member['session_id']}", headers=daemon.owner_headers()
        )
        assert found.status_code == 200, member
        assert (found.json()["kind"], found.json()["agent"]) == ("subagent", "fake")
    done = await tool(daemon, "wait_for_subagents", turn_id=made["turn_id"], timeout_s=120)
    wall = time.monotonic() - started
    assert done["completed"] and not done["timed_out"]
    assert [r["status"] for r in done["reports"]] == ["done"] * 3, done
    stored = turn(daemon, made["turn_id"])["subagents"]
    # At once: every subagent was running before any of them finished, so the turn's span (svc's
    # own timestamps, not this test's clock, which also counts a busy machine's start-up) is
    # shorter than the three run one after another.
    starts, ends = [when(s["started_at"]) for s in stored], [when(s["finished_at"]) for s in stored]
    assert max(starts) < min(ends)
    assert max(ends) - min(starts) < sum(e - s for s, e in zip(starts, ends, strict=True))
    print(f"parallel turn: wall {wall:.2f} s, span {max(ends) - min(starts):.2f} s")
    head = git(repo, "rev-parse", "HEAD").strip()
    for report, lines in zip(done["reports"], (3, 5, 8), strict=True):
        name = report["name"]
        changes = report["changes"]
        assert changes["branch"] == f"svc/{made['turn_id']}/{name}"
        worktree = Path(changes["worktree"])
        assert worktree.is_relative_to(daemon.home / "worktrees")
        assert (worktree / "feature.txt").exists()  # made from HEAD, not from main
        assert report["summary"] == f"{name} wrote {lines}"
        assert report["report"] == {"summary": f"{name} wrote {lines}"}
        # svc's own numbers are git's.
        stat = git(repo, "diff", "--shortstat", f"{head}..{changes['branch']}")
        assert stat.strip() == f"1 file changed, {lines} insertions(+)"
        assert (changes["commits"], changes["files_changed"]) == (1, 1)
        assert (changes["insertions"], changes["deletions"]) == (lines, 0)
    env, _ = json.JSONDecoder().raw_decode(done["reports"][0]["final_message"])
    assert env["SVC_AGENT_ROLE"] == "subagent"
    assert env["SVC_SUBAGENT_TURN_ID"] == made["turn_id"]
    assert env["SVC_SUBAGENT_ID"] == done["reports"][0]["id"]
    assert git(repo, "status", "--porcelain") == ""  # the caller's checkout is untouched
    # The command line shows the same turn, with svc's numbers.
    listed = daemon.manage("turns").stdout
    row = next(line.split() for line in listed.splitlines() if line.endswith("c wrote 8"))
    assert row[:6] == [made["turn_id"][:8], "parallel", "completed", "c", "fake", "done"]
    assert "1 commits, 1 files +8 -0" in " ".join(row)
    as_json = json.loads(daemon.manage("turns", "--json").stdout)
    assert made["turn_id"] in {t["turn_id"] for t in as_json}
    # The live list showed the turn's progress.
    seen: list[str] = []
    while "done" not in seen:
        entries = json.loads(await runtime.recv())
        seen += [
            s["status"]
            for e in entries
            if e.get("turn_id") == made["turn_id"]
            for s in e["subagents"]
        ]
    assert "running" in seen
    await runtime.close()
    assert live_pids_with(made["turn_id"]) == []  # nothing of a finished turn keeps running


async def test_collaboration_runs_in_order_and_hands_each_the_reports_before_it(
    daemon: Daemon, repo: Path
) -> None:
    agents = [
        {"name": "first", "agent": "fake", "task": 'report {"summary": "alpha found the bug"}'},
        {
            "name": "second",
            "agent": "fake",
            "task": 'commit fix.txt 2 ; report {"summary": "beta fixed it"}',
        },
        {"name": "third", "agent": "fake", "task": "prompts"},
    ]
    made = await tool(
        daemon,
        "initialize_subagents",
        mode="collaboration",
        cwd=str(repo),
        agents=agents,
        task="fix the bug",
    )
    workspaces = {s["workspace"] for s in made["subagents"]}
    assert len(workspaces) == 1  # one shared worktree
    done = await tool(daemon, "wait_for_subagents", turn_id=made["turn_id"], timeout_s=120)
    assert [r["status"] for r in done["reports"]] == ["done"] * 3, done
    stored = turn(daemon, made["turn_id"])["subagents"]
    for before, after in itertools.pairwise(stored):
        assert when(after["started_at"]) >= when(before["finished_at"])
    third_prompt = json.loads(done["reports"][2]["final_message"])[-1]
    assert "alpha found the bug" in third_prompt and "beta fixed it" in third_prompt
    assert "fix the bug" in third_prompt
    # Measured on the shared worktree, after each: the second one's commit is in the third's.
    assert done["reports"][0]["changes"]["commits"] == 0
    assert done["reports"][1]["changes"]["insertions"] == 2
    assert done["reports"][2]["changes"]["commits"] == 1


async def test_brainstorming_refuses_edits_and_nothing_is_written(
    daemon: Daemon, repo: Path
) -> None:
    agents = [
        {"name": "writer", "agent": "fake", "task": "commit idea.txt 4"},
        {"name": "thinker", "agent": "fake", "task": "think use a cache"},
    ]
    made = await tool(
        daemon, "initialize_subagents", mode="brainstorming", cwd=str(repo), agents=agents
    )
    assert {s["workspace"] for s in made["subagents"]} == {str(repo)}  # no worktrees
    done = await tool(daemon, "wait_for_subagents", turn_id=made["turn_id"], timeout_s=60)
    writer, thinker = done["reports"]
    assert writer["status"] == "done" and "refused idea.txt" in writer["final_message"]
    assert not (repo / "idea.txt").exists()
    assert git(repo, "status", "--porcelain") == ""
    assert thinker["summary"] == "use a cache" and writer["changes"] is None


async def test_a_short_wait_times_out_with_the_snapshot_progress_keeps_coming_and_cancel_cleans_up(
    daemon: Daemon, repo: Path
) -> None:
    agents = [
        {"name": "slow", "agent": "fake", "task": "sleep 60"},
        {"name": "quick", "agent": "fake", "task": "echo quick done"},
    ]
    made = await tool(daemon, "initialize_subagents", mode="parallel", cwd=str(repo), agents=agents)
    turn_id = made["turn_id"]
    early = await tool(daemon, "wait_for_subagents", turn_id=turn_id, timeout_s=1)
    assert early["timed_out"] and not early["completed"]
    assert {r["name"] for r in early["reports"]} == {"slow", "quick"}
    # Calling again keeps waiting; progress arrives at least every 15 s while `slow` sleeps.
    beats: list[tuple[float, float, str]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        beats.append((time.monotonic(), value, message or ""))

    started = time.monotonic()
    async with mcp_client(daemon) as client:
        later = await client.call_tool(
            "wait_for_subagents", {"turn_id": turn_id, "timeout_s": 12}, progress_callback=progress
        )
    waited = time.monotonic() - started
    assert later.structured_content["timed_out"]
    quick = next(r for r in later.structured_content["reports"] if r["name"] == "quick")
    assert quick["status"] == "done" and quick["summary"] == "quick done"
    stamps = [started] + [b[0] for b in beats] + [started + waited]
    assert len(beats) >= 2 and max(b - a for a, b in itertools.pairwise(stamps)) <= 15
    assert [b[1] for b in beats] == sorted({b[1] for b in beats})  # strictly growing
    assert "slow: running" in beats[-1][2]
    # Nothing changes state in the wait's second half (quick is done, slow sleeps): a beat
    # there is the heartbeat itself, not a state change.
    assert any(b[0] - started >= 5 for b in beats), [round(b[0] - started, 1) for b in beats]
    assert live_pids_with(turn_id)  # `slow` still runs
    # Cancel with cleanup: every process of the turn gone, worktrees and branches removed.
    answer = httpx.delete(
        f"{daemon.url}/api/subagent-turns/{turn_id}?cleanup=1",
        headers=daemon.owner_headers(),
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "cancelled" and body["cancelled"]
    slow = next(s for s in body["subagents"] if s["name"] == "slow")
    assert slow["status"] == "cancelled"
    assert live_pids_with(turn_id) == []
    assert not (daemon.home / "worktrees" / turn_id).exists()
    assert git(repo, "branch", "--list", f"svc/{turn_id}/*") == ""
    assert "prunable" not in git(repo, "worktree", "list", "--porcelain")


async def test_a_crashing_or_unstartable_subagent_ends_failed_with_its_error(
    daemon: Daemon, tmp_path: Path
) -> None:
    agents = [
        {"name": "crasher", "agent": "fake", "task": "crash"},
        {"name": "nostart", "agent": "broken", "task": "anything"},
        {"name": "fine", "agent": "fake", "task": "echo still fine"},
    ]
    made = await tool(
        daemon, "initialize_subagents", mode="parallel", cwd=str(tmp_path), agents=agents
    )
    done = await tool(daemon, "wait_for_subagents", turn_id=made["turn_id"], timeout_s=60)
    crasher, nostart, fine = done["reports"]
    assert crasher["status"] == "failed"
    assert "exited with code 3" in crasher["summary"]
    assert "crashing on purpose" in crasher["summary"]
    assert nostart["status"] == "failed" and "could not start 'broken'" in nostart["summary"]
    assert fine["status"] == "done" and fine["changes"] is None  # not a git repository
    assert done["completed"]


async def test_argument_errors_say_what_to_send(daemon: Daemon, tmp_path: Path) -> None:
    one = [{"name": "a", "agent": "fake", "task": "echo hi"}]
    cases = {
        "1 to 8": dict(agents=[{"name": f"n{i}", "agent": "fake", "task": "x"} for i in range(9)]),
        "got 0": dict(agents=[]),
        "non-blank": dict(agents=[{"name": " ", "agent": "fake", "task": "x"}]),
        "used twice": dict(agents=one + one),
        "'nope' is unknown": dict(agents=[{"name": "a", "agent": "nope", "task": "x"}]),
        "existing directory": dict(agents=one, cwd=str(tmp_path / "missing")),
    }
    for expected, arguments in cases.items():
        arguments = {"mode": "parallel", "cwd": str(tmp_path), **arguments}
        message = await tool_error(daemon, "initialize_subagents", **arguments)
        assert expected in message, (expected, message)
    message = await tool_error(daemon, "wait_for_subagents", turn_id="no-such-turn")
    assert "no subagent turn 'no-such-turn'" in message


async def test_an_agent_hosted_by_svc_delegates_over_mcp_and_stopping_it_cancels_its_turns(
    daemon: Daemon, tmp_path: Path
) -> None:
    """Driven from an agent: the scripted agent, hosted by svc, calls initialize_subagents and
    wait_for_subagents with the MCP URL, token and session id svc gave it."""
    chat = await Chat.connect(daemon)
    opened = await chat.open(agent="fake", workspace=str(tmp_path))
    parent = opened["session_id"]
    delegate = {
        "mode": "parallel",
        "cwd": str(tmp_path),
        "agents": [{"name": "helper", "agent": "fake", "task": 'report {"summary": "helped"}'}],
    }
    await chat.send(type="prompt", session_id=parent, text=f"delegate {json.dumps(delegate)}")
    await chat.next("turn_end", timeout=90)
    said = json.loads(chat.texts())
    assert said["waited"]["completed"]
    assert said["waited"]["reports"][0]["summary"] == "helped"
    assert turn(daemon, said["initialized"]["turn_id"])["parent_session_id"] == parent
    # A turn still running when its parent stops is cancelled with it.
    slow = {
        "mode": "parallel",
        "cwd": str(tmp_path),
        "agents": [{"name": "sleeper", "agent": "fake", "task": "sleep 60"}],
    }
    text = f"mcp initialize_subagents {json.dumps(slow)}"
    await chat.send(type="prompt", session_id=parent, text=text)
    ended = await chat.next("turn_end", timeout=60)
    assert ended["stop_reason"] == "end_turn"
    turn_id = json.loads(last_said(chat))["turn_id"]
    deadline = time.monotonic() + 20
    while not live_pids_with(turn_id):
        assert time.monotonic() < deadline, "the sleeper never started"
        time.sleep(0.1)
    stopped = httpx.delete(
        f"{daemon.url}/api/sessions/{parent}?wait=1", headers=daemon.owner_headers(), timeout=60
    )
    assert stopped.status_code == 200
    deadline = time.monotonic() + 20
    while turn(daemon, turn_id)["status"] == "running":
        assert time.monotonic() < deadline, "the parent stopped but its turn still runs"
        time.sleep(0.1)
    assert turn(daemon, turn_id)["status"] == "cancelled"
    assert live_pids_with(turn_id) == []
    await chat.close()


def last_said(chat: Chat) -> str:
    texts = [e.get("text", "") for e in chat.events if e["kind"] == "agent_message_chunk"]
    return texts[-1]
