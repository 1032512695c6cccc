"""Subagent turns as they run (subagents_app/subagent_runs.py), in process: a started runtime, the
scripted ACP agent as agent "fake", `rt.subagents.start/wait/cancel` — reports, modes,
permissions, failures, cancelling, and a stopped parent taking its turns with it."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from harness.runtime import running, settings_file
from harness.termclient import hosting_settings
from sessions_app import selectors
from sessions_app.models import Session, SessionEvent
from sessions_app.services import asession_create, asession_stop
from subagents_app import subagents
from svcproject.parts import Parts

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fake_agent(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The fake agent and one that cannot start; a quick progress beat. The worker's own
    settings.json comes back at the end."""
    monkeypatch.setenv("SVC_SUBAGENT_PROGRESS_S", "0.2")
    settings = hosting_settings()
    settings["agents"]["broken"] = {
        "acp_command": [sys.executable, "-c", "import sys; sys.exit(7)"],
        "enabled": True,
    }
    with settings_file(settings):
        yield


@pytest.fixture
async def rt(fake_agent: None) -> AsyncIterator[Parts]:
    async with running() as runtime:
        yield runtime


async def create(
    mode: str, cwd: Path, agents: list[dict[str, Any]], **kwargs: Any
) -> dict[str, Any]:
    turn = await sync_to_async(subagents.turn_create)(
        mode=mode, cwd=str(cwd), agents=[{"agent": "fake", **a} for a in agents], **kwargs
    )
    return await sync_to_async(subagents.turn_dict)(turn)


class Progress:
    def __init__(self) -> None:
        self.snapshots: list[dict[str, Any]] = []

    async def __call__(self, snapshot: dict[str, Any]) -> None:
        self.snapshots.append(snapshot)


async def run(rt: Parts, turn: dict[str, Any], timeout_s: float = 30) -> dict[str, Any]:
    rt.subagents.start(turn["turn_id"])
    done = await rt.subagents.wait(turn["turn_id"], timeout_s, Progress())
    assert done["completed"] and not done["timed_out"], done
    return done


async def session(session_id: str) -> Session:
    found = await sync_to_async(selectors.session_get)(session_id)
    assert found is not None, f"no session {session_id}"
    return found


async def until(condition: Any, limit: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + limit
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


def gone(pid: int | None) -> bool:
    """No such process, or only its zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def when(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


async def test_sessions_exist_at_once_and_wait_returns_the_parsed_reports(
    rt: Parts, tmp_path: Path
) -> None:
    turn = await create(
        "parallel",
        tmp_path,
        [
            {
                "name": "reporter",
                "task": 'echo looked around ; report {"summary": "all good", "n": 2}',
            },
            {"name": "plain", "task": "echo plain words"},
        ],
    )
    ids = [s["session_id"] for s in turn["subagents"]]
    for sid in ids:  # what GET /api/sessions/{id} shows, before anything ran
        row = await session(sid)
        assert (row.kind, row.status, row.agent) == ("subagent", "starting", "fake")
    progress = Progress()
    rt.subagents.start(turn["turn_id"])
    done = await rt.subagents.wait(turn["turn_id"], 30, progress)
    assert (done["status"], done["completed"], done["timed_out"]) == ("completed", True, False)
    reporter, plain = done["subagents"]
    assert reporter["status"] == "done" and plain["status"] == "done"
    assert reporter["report"] == {"summary": "all good", "n": 2}
    assert reporter["summary"] == "all good"
    assert reporter["final_message"].startswith("looked around")
    assert plain["report"] is None and plain["summary"] == "plain words"
    assert [s["session_id"] for s in done["subagents"]] == ids  # the same sessions ran
    assert progress.snapshots and progress.snapshots[0]["turn_id"] == turn["turn_id"]
    for sid in ids:  # nothing of a finished subagent keeps running; its chat stays readable
        row = await session(sid)
        assert row.status == "exited" and rt.host.chat(sid) is None and gone(row.pid)
        assert await SessionEvent.objects.filter(session_id=sid, kind="turn_end").aexists()
    # Waiting on an ended turn answers at once.
    again = await rt.subagents.wait(turn["turn_id"], 30, Progress())
    assert again["completed"] and again["subagents"] == done["subagents"]


async def test_parallel_subagents_run_at_the_same_time_and_cancel_ends_them(
    rt: Parts, tmp_path: Path
) -> None:
    turn = await create(
        "parallel",
        tmp_path,
        [{"name": "one", "task": "wait 60"}, {"name": "two", "task": "wait 60"}],
    )
    turn_id = turn["turn_id"]
    rt.subagents.start(turn_id)

    async def both_running() -> bool:
        snapshot = await sync_to_async(subagents.turn_snapshot)(turn_id)
        return [s["status"] for s in snapshot["subagents"]] == ["running", "running"]

    await until(both_running)  # at once: neither waits for the other to end
    pids = [(await session(s["session_id"])).pid for s in turn["subagents"]]
    assert all(pid and not gone(pid) for pid in pids)
    # A short wait times out with the snapshot, having heard a beat every 0.2 s.
    progress = Progress()
    early = await rt.subagents.wait(turn_id, 1.0, progress)
    assert early["timed_out"] and not early["completed"] and early["status"] == "running"
    assert len(progress.snapshots) >= 3
    assert await rt.subagents.cancel(turn_id) is True
    snapshot = await sync_to_async(subagents.turn_snapshot)(turn_id)
    assert snapshot["status"] == "cancelled"
    assert [s["status"] for s in snapshot["subagents"]] == ["cancelled", "cancelled"]
    assert all(gone(pid) for pid in pids)
    for entry in snapshot["subagents"]:
        assert rt.host.chat(entry["session_id"]) is None
        assert (await session(entry["session_id"])).status == "exited"
    waited = await rt.subagents.wait(turn_id, 5, Progress())
    assert waited["completed"] and not waited["timed_out"]
    assert await rt.subagents.cancel(turn_id) is False  # no longer running


async def test_collaboration_runs_in_order_and_passes_the_earlier_reports_on(
    rt: Parts, tmp_path: Path
) -> None:
    turn = await create(
        "collaboration",
        tmp_path,
        [
            {"name": "first", "task": 'report {"summary": "alpha found the bug"}'},
            {"name": "second", "task": "prompts"},
        ],
        task="fix the bug",
    )
    done = await run(rt, turn)
    first, second = done["subagents"]
    assert first["status"] == second["status"] == "done"
    assert when(second["started_at"]) >= when(first["finished_at"])  # one after another
    (told,) = json.loads(second["final_message"])
    assert 'You are subagent "second" of an svc collaboration turn' in told
    assert "- first (fake), done: alpha found the bug" in told
    assert 'report: {"summary": "alpha found the bug"}' in told
    assert told.rstrip().endswith("Your task:\nprompts")
    assert "The shared task:\nfix the bug" in told


async def test_brainstorming_refuses_every_permission_and_parallel_allows_them(
    rt: Parts, tmp_path: Path
) -> None:
    idea = await create("brainstorming", tmp_path, [{"name": "b", "task": "write idea.txt"}])
    work = await create("parallel", tmp_path, [{"name": "p", "task": "write done.txt"}])
    rt.subagents.start(work["turn_id"])  # both turns at once
    brainstormed = await run(rt, idea)
    worked = await rt.subagents.wait(work["turn_id"], 30, Progress())
    (b,) = brainstormed["subagents"]
    (p,) = worked["subagents"]
    assert b["status"] == "done" and b["final_message"] == "write: reject"
    assert not (tmp_path / "idea.txt").exists()
    assert p["status"] == "done" and p["final_message"] == "write: allow"
    assert (tmp_path / "done.txt").exists()
    resolved = SessionEvent.objects.filter(session_id=b["session_id"], kind="permission_resolved")
    (event,) = [e async for e in resolved]
    assert event.payload["policy"] == "deny" and event.payload["allowed"] is False


async def test_a_crashing_or_unstartable_agent_fails_with_its_error_as_summary(
    rt: Parts, tmp_path: Path
) -> None:
    turn = await create(
        "parallel",
        tmp_path,
        [
            {"name": "crasher", "task": "crash"},
            {"name": "nostart", "agent": "broken", "task": "anything"},
            {"name": "fine", "task": "echo still fine"},
        ],
    )
    done = await run(rt, turn)
    crasher, nostart, fine = done["subagents"]
    assert crasher["status"] == "failed"
    assert "the agent exited with code 3" in crasher["summary"]
    assert "crashing on purpose" in crasher["summary"]  # its own words, from its stderr
    # Its last words, said 50 ms before it died, are kept: the host reads the agent's output to
    # the end before it closes the connection (AcpSession._drain).
    assert crasher["final_message"] == "about to crash"
    assert nostart["status"] == "failed"
    assert nostart["summary"].startswith("could not start 'broken'")
    assert (fine["status"], fine["summary"]) == ("done", "still fine"), fine
    assert done["status"] == "completed"
    crashed = await session(crasher["session_id"])
    assert (crashed.status, crashed.exit_code) == ("exited", 3)
    # Ended, not left `starting`: a start that fails marks the row `failed`, keeping the code
    # the agent exited with when it exited before the start gave up (contract §10: it says why).
    unstarted = await session(nostart["session_id"])
    assert unstarted.status == "failed" and unstarted.exit_code in (None, 7)


async def test_stopping_the_parent_session_cancels_its_running_turns(
    rt: Parts, tmp_path: Path
) -> None:
    parent = await asession_create(host=rt.host, agent="fake", workspace=str(tmp_path), kind="chat")
    turn = await create(
        "parallel",
        tmp_path,
        [{"name": "sleeper", "task": "wait 60"}],
        parent_session_id=str(parent.id),
    )
    assert turn["parent_session_id"] == str(parent.id)
    (member,) = turn["subagents"]
    rt.subagents.start(turn["turn_id"])

    async def running_now() -> bool:
        return (await session(member["session_id"])).status == "running"

    await until(running_now)
    pid = (await session(member["session_id"])).pid
    stopped, _ = await asession_stop(host=rt.host, session_id=str(parent.id))
    assert stopped.status == "exited"

    async def cancelled() -> bool:
        snapshot = await sync_to_async(subagents.turn_snapshot)(turn["turn_id"])
        return snapshot["status"] == "cancelled"

    await until(cancelled)
    snapshot = await sync_to_async(subagents.turn_snapshot)(turn["turn_id"])
    assert snapshot["subagents"][0]["status"] == "cancelled"
    assert gone(pid) and rt.host.chat(member["session_id"]) is None


async def test_a_turn_cancelled_before_its_agents_start_ends_their_sessions(
    rt: Parts, tmp_path: Path
) -> None:
    """Collaboration: the subagents after a cancelled one never start; their sessions, made
    with the turn, do not stay `starting` for ever."""
    turn = await create(
        "collaboration",
        tmp_path,
        [
            {"name": "now", "task": "wait 60"},
            {"name": "later", "task": "echo never"},
        ],
    )
    now, later = turn["subagents"]
    rt.subagents.start(turn["turn_id"])

    async def running_now() -> bool:
        return (await session(now["session_id"])).status == "running"

    await until(running_now)
    assert await rt.subagents.cancel(turn["turn_id"])
    snapshot = await sync_to_async(subagents.turn_snapshot)(turn["turn_id"])
    assert [s["status"] for s in snapshot["subagents"]] == ["cancelled", "cancelled"]
    assert snapshot["subagents"][1]["summary"] == "cancelled before it started"
    never = await session(later["session_id"])
    assert never.status != "starting" and never.pid is None
