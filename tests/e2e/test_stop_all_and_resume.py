"""Ending every session and resuming one (contract §17 `host.on_exit` and "Resume"), against a
live daemon over real sockets: `POST /api/sessions/stop_all`, `POST /api/sessions/{id}/resume`,
`bin/svc sessions --stop-all`, `bin/svc resume ID`, and who may call them from where."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.daemon import ROOT, Daemon, migrated_home
from harness.termclient import (
    Chat,
    create_session,
    get_session,
    hosting_settings,
    shell_env,
    stop_session,
)
from tests.e2e.test_remote_tunnel import Remote


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-stop-all")
    settings = hosting_settings()
    # A second declared agent, the same fake: removed later, so its chat cannot be resumed.
    settings["agents"]["gone"] = dict(settings["agents"]["fake"])
    server = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    yield server
    server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def post(daemon: Daemon, path: str, **kwargs: Any) -> httpx.Response:
    kwargs.setdefault("headers", daemon.owner_headers())
    return httpx.post(f"{daemon.url}/api/{path}", timeout=60, **kwargs)


def live_ids(daemon: Daemon) -> list[str]:
    rows = httpx.get(
        f"{daemon.url}/api/sessions", params={"status": "live"}, headers=daemon.owner_headers()
    ).json()
    return [r["id"] for r in rows]


def gone(pid: int, timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_stop_all_ends_two_terminals_and_a_chat_and_says_how_many(
    host: Daemon, workspace: Path
) -> None:
    assert live_ids(host) == []
    made = [
        create_session(host, workspace),
        create_session(host, workspace),
        create_session(host, workspace, agent="fake", kind="chat"),
    ]
    assert [(s["kind"], s["status"]) for s in made] == [
        ("terminal", "running"),
        ("terminal", "running"),
        ("chat", "running"),
    ]
    started = time.monotonic()
    answer = post(host, "sessions/stop_all")
    took = time.monotonic() - started
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"stopped": 3}
    for session in made:
        row = get_session(host, session["id"])
        assert (row["status"], row["end_reason"], row["ended_by"]) == ("exited", "stopped", "user")
        assert row["detail"] == "stopped by you"
        assert gone(session["pid"]), f"{session['kind']} {session['pid']} still runs"
    assert live_ids(host) == []
    assert post(host, "sessions/stop_all").json() == {"stopped": 0}
    # `stop_all` is never taken for a session's id.
    assert (
        httpx.get(f"{host.url}/api/sessions/stop_all", headers=host.owner_headers()).status_code
        == 405
    )
    print(f"stop_all of 3 sessions answered in {took:.2f} s")


async def history(daemon: Daemon, session_id: str) -> list[dict[str, Any]]:
    """The chat's stored events, as a client opening it is replayed them."""
    chat = await Chat.connect(daemon)
    try:
        await chat.open(session_id=session_id)
        return [e for e in chat.events if e.get("replay")]
    finally:
        await chat.close()


async def prompt(daemon: Daemon, session_id: str, text: str) -> None:
    chat = await Chat.connect(daemon)
    try:
        ready = await chat.open(session_id=session_id)
        assert ready["status"] == "running", ready
        await chat.send(type="prompt", session_id=session_id, text=text)
        await chat.next("turn_end", timeout=30)
    finally:
        await chat.close()


def said(events: list[dict[str, Any]], kind: str) -> list[str]:
    return [e.get("text", "") for e in events if e["kind"] == kind]


def test_a_stopped_chat_resumes_under_the_same_id_with_its_history_once(
    host: Daemon, workspace: Path
) -> None:
    chat = create_session(host, workspace, agent="fake", kind="chat")
    sid = chat["id"]
    asyncio.run(prompt(host, sid, "echo before"))
    before = asyncio.run(history(host, sid))
    assert stop_session(host, sid).json()["end_reason"] == "stopped"

    answer = post(host, f"sessions/{sid[:8]}/resume")  # a prefix, as the dashboard shows ids
    assert answer.status_code == 200, answer.text
    row = answer.json()
    assert (row["id"], row["status"], row["end_reason"], row["ended_at"]) == (
        sid,
        "running",
        "",
        None,
    )
    assert row["agent_session_id"] == chat["agent_session_id"]  # the agent's own session, loaded
    assert row["pid"] != chat["pid"] and not gone(row["pid"], timeout=0)
    # Running already: answered as it is, nothing started again.
    again = post(host, f"sessions/{sid}/resume")
    assert again.status_code == 200 and again.json()["pid"] == row["pid"]

    asyncio.run(prompt(host, sid, "echo after"))
    after = asyncio.run(history(host, sid))
    assert after[: len(before)] == before  # what was stored stays as it was
    seqs = [e["seq"] for e in after]
    assert seqs == sorted(set(seqs)), seqs  # no event twice
    assert said(after, "user_message_chunk") == ["echo before", "echo after"]
    assert "".join(said(after, "agent_message_chunk")) == "beforeafter"
    stop_session(host, sid)


def test_a_stopped_terminal_resumes_under_the_same_id(host: Daemon, workspace: Path) -> None:
    terminal = create_session(host, workspace)
    stop_session(host, terminal["id"])
    answer = post(host, f"sessions/{terminal['id']}/resume")
    assert answer.status_code == 200, answer.text
    row = answer.json()
    assert (row["id"], row["kind"], row["status"]) == (terminal["id"], "terminal", "running")
    assert row["pid"] != terminal["pid"]
    stop_session(host, terminal["id"])


def test_resume_says_why_it_cannot(host: Daemon, workspace: Path) -> None:
    unknown = post(host, "sessions/00000000-0000-0000-0000-000000000000/resume")
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"].startswith("no session 00000000")
    assert post(host, "sessions/zzzz/resume").status_code == 404

    # Its agent is no longer declared: the service's refusal, in the API's error shape.
    chat = create_session(host, workspace, agent="gone", kind="chat")
    stop_session(host, chat["id"])
    removed = httpx.delete(f"{host.url}/api/agents/gone", headers=host.owner_headers())
    assert removed.status_code == 204, removed.text
    refused = post(host, f"sessions/{chat['id']}/resume")
    assert refused.status_code == 400, refused.text
    assert "unknown agent 'gone'" in refused.json()["error"]["message"]
    assert get_session(host, chat["id"])["status"] == "exited"


def test_strangers_and_the_mcp_token_may_neither_stop_all_nor_resume(
    host: Daemon, workspace: Path
) -> None:
    ended = create_session(host, workspace, agent="fake", kind="chat")
    stop_session(host, ended["id"])
    running = create_session(host, workspace)
    attempts = {
        "no token": {},
        "the MCP token": {"Authorization": f"Bearer {host.mcp_token}"},
    }
    for who, headers in attempts.items():
        for path in ("sessions/stop_all", f"sessions/{ended['id']}/resume"):
            answer = post(host, path, headers=headers)
            assert answer.status_code == 401, (who, path, answer.text)
            assert answer.json()["error"]["code"] == "not_authenticated"
    # On the remote listener, a browser that is not paired: not even the owner token counts.
    remote = Remote(host, host.auth()["remote_port"])
    with remote.client() as stranger:
        token = {"Authorization": f"Bearer {host.owner_token}"}
        assert stranger.post("/api/sessions/stop_all", headers=token).status_code == 401
        assert stranger.post(f"/api/sessions/{ended['id']}/resume").status_code == 401
    assert get_session(host, running["id"])["status"] == "running"
    assert get_session(host, ended["id"])["status"] == "exited"
    stop_session(host, running["id"])


def test_a_paired_phone_may_resume_a_chat_and_stop_all(host: Daemon, workspace: Path) -> None:
    """A person away from the machine ends a runaway agent, or brings a chat back."""
    ended = create_session(host, workspace, agent="fake", kind="chat")
    stop_session(host, ended["id"])
    running = create_session(host, workspace)
    remote = Remote(host, host.auth()["remote_port"])
    with remote.client() as phone:
        paired = remote.pair(phone)
        key = {"X-Svc-Page-Key": paired["page_key"], "Content-Type": "application/json"}
        resumed = phone.post(f"/api/sessions/{ended['id']}/resume", headers=key, timeout=60)
        assert resumed.status_code == 200, resumed.text
        assert resumed.json()["status"] == "running"
        stopped = phone.post("/api/sessions/stop_all", headers=key, timeout=60)
        assert stopped.status_code == 200, stopped.text
        assert stopped.json() == {"stopped": 2}
        phone.delete(f"/api/pairings/{paired['device']['id']}", headers=key)
    for session in (ended, running):
        assert get_session(host, session["id"])["end_reason"] == "stopped"


def bin_svc(daemon: Daemon, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
    return subprocess.run(
        [str(ROOT / "bin" / "svc"), *args],
        env={**env, "SVC_HOME": str(daemon.home)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_bin_svc_stops_every_session_and_resumes_one_by_its_prefix(
    host: Daemon, workspace: Path
) -> None:
    assert live_ids(host) == []
    chat = create_session(host, workspace, agent="fake", kind="chat")
    terminal = create_session(host, workspace)

    stopped = bin_svc(host, "sessions", "--stop-all")
    assert (stopped.returncode, stopped.stdout, stopped.stderr) == (0, "stopped 2 sessions\n", "")
    assert live_ids(host) == []
    # The list says how each ended, in the words the dashboard uses.
    listed = bin_svc(host, "sessions").stdout.splitlines()
    assert listed[0].split()[-1] == "detail"
    row = next(line for line in listed if line.startswith(terminal["id"][:8]))  # short ids
    assert row.endswith("stopped by you"), row

    resumed = bin_svc(host, "resume", chat["id"][:8])
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == f"session {chat['id']} (fake chat) is running\n"
    assert live_ids(host) == [chat["id"]]
    assert get_session(host, chat["id"])["agent_session_id"] == chat["agent_session_id"]

    unknown = bin_svc(host, "resume", "zzzz")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr.startswith("POST /api/sessions/zzzz/resume: 404 no session")

    assert bin_svc(host, "sessions", "--stop-all").stdout == "stopped 1 session\n"
    assert bin_svc(host, "sessions", "--stop-all").stdout == "no session was running\n"
