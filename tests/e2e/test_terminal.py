"""Terminal sessions over a live daemon with the `websockets` client (issue 4, acceptance 1)."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from harness.daemon import Daemon
from harness.termclient import (
    Term,
    create_session,
    get_session,
    open_ws,
    start_hosting_daemon,
    stop_session,
)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-terminal"))
    yield server
    server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path


async def test_typed_command_prints_its_output(host: Daemon, workspace: Path) -> None:
    session = create_session(host, workspace)
    assert session["status"] == "running" and session["pid"]
    term = await Term.open(host, session["id"])
    assert term.state == {"type": "running"}
    await term.run("echo svc-$((6*7))")
    await term.expect(b"svc-42\r\n")
    await term.close()
    stop_session(host, session["id"])


async def test_resize_changes_what_stty_reports(host: Daemon, workspace: Path) -> None:
    session = create_session(host, workspace, cols=90, rows=20)
    term = await Term.open(host, session["id"])
    await term.run("stty size")
    await term.expect(b"20 90\r\n")
    await term.ws.send('{"type":"resize","cols":123,"rows":37}')
    await term.run("stty size")
    await term.expect(b"37 123\r\n")
    await term.close()
    stop_session(host, session["id"])


async def test_two_viewers_share_output_and_closing_one_keeps_the_process(
    host: Daemon, workspace: Path
) -> None:
    session = create_session(host, workspace)
    first = await Term.open(host, session["id"])
    second = await Term.open(host, session["id"])
    await first.run("echo both-$((2*3))")
    await first.expect(b"both-6\r\n")
    await second.expect(b"both-6\r\n")
    await second.close()
    await first.run("echo still-$((4+4))")
    await first.expect(b"still-8\r\n")
    assert get_session(host, session["id"])["status"] == "running"
    await first.close()
    stop_session(host, session["id"])


async def test_exit_code_reaches_viewers_and_the_row(host: Daemon, workspace: Path) -> None:
    session = create_session(host, workspace)
    term = await Term.open(host, session["id"])
    await term.run("exit 3")
    assert await term.expect_event("exited") == {"type": "exited", "exit_code": 3}
    row = get_session(host, session["id"])
    assert (row["status"], row["exit_code"]) == ("exited", 3)
    assert row["ended_at"]


async def test_reconnecting_viewer_first_gets_the_scrollback(host: Daemon, workspace: Path) -> None:
    session = create_session(host, workspace)
    term = await Term.open(host, session["id"])
    await term.run("echo remembered-$((5*5))")
    await term.expect(b"remembered-25\r\n")
    await term.close()
    again = await Term.open(host, session["id"])
    assert b"remembered-25\r\n" in again.scrollback
    assert again.state == {"type": "running"}
    await again.run("exit 0")
    await again.expect_event("exited")
    ended = await Term.open(host, session["id"])
    assert b"remembered-25\r\n" in ended.scrollback
    assert ended.state == {"type": "exited", "exit_code": 0}


async def test_text_frames_are_typed_as_utf8(host: Daemon, workspace: Path) -> None:
    session = create_session(host, workspace)
    term = await Term.open(host, session["id"])
    await term.ws.send("echo ünï-$((1+1))\r")
    await term.expect("ünï-2\r\n".encode())
    await term.close()
    stop_session(host, session["id"])


async def test_unknown_session_closes_with_4404(host: Daemon) -> None:
    for session_id in ("00000000-0000-0000-0000-000000000000", "not-a-uuid"):
        ws = await open_ws(host, f"/ws?session_id={session_id}")
        with pytest.raises(ConnectionClosed):
            await ws.recv()
        assert ws.close_code == 4404


async def test_bad_token_closes_with_4401(host: Daemon, workspace: Path) -> None:
    from websockets.asyncio.client import connect

    session = create_session(host, workspace)
    ws = await connect(
        f"{host.ws_url}/ws?session_id={session['id']}&token=wrong", origin=host.origin
    )
    with pytest.raises(ConnectionClosed):
        await ws.recv()
    assert ws.close_code == 4401
    stop_session(host, session["id"])


def test_delete_stops_the_process_and_keeps_the_row(host: Daemon, workspace: Path) -> None:
    session = create_session(host, workspace)
    response = stop_session(host, session["id"])
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "exited"
    assert response.json()["exit_code"] == 129  # SIGHUP, like a closed terminal
    assert not Path(f"/proc/{session['pid']}").exists() or _is_zombie(session["pid"])
    listed = httpx.get(f"{host.url}/api/sessions", headers=host.owner_headers()).json()
    assert session["id"] in {s["id"] for s in listed}


def test_delete_without_wait_answers_at_once_and_the_row_follows(
    host: Daemon, workspace: Path
) -> None:
    session = create_session(host, workspace)
    response = stop_session(host, session["id"], wait=False)
    assert response.status_code == 202, response.text
    assert response.json()["id"] == session["id"]
    deadline = time.monotonic() + 30
    while get_session(host, session["id"])["status"] != "exited":
        assert time.monotonic() < deadline, "the session never became exited"
        time.sleep(0.02)
    assert get_session(host, session["id"])["exit_code"] == 129


def test_bad_requests_say_what_to_send(host: Daemon, workspace: Path) -> None:
    def post(body: dict) -> httpx.Response:
        return httpx.post(f"{host.url}/api/sessions", json=body, headers=host.owner_headers())

    assert "unknown agent" in post({"agent": "nope", "workspace": str(workspace)}).text
    assert post({"agent": "shell", "workspace": "relative"}).status_code == 400
    bad_kind = post({"agent": "shell", "workspace": str(workspace), "kind": "x"})
    assert bad_kind.status_code == 400
    no_profile = post({"agent": "shell", "workspace": str(workspace), "profile_id": "zz"})
    assert no_profile.status_code == 400 and "unknown profile" in no_profile.text
    missing = httpx.delete(
        f"{host.url}/api/sessions/00000000-0000-0000-0000-000000000000",
        headers=host.owner_headers(),
    )
    assert missing.status_code == 404


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_an_agent_whose_program_is_missing_is_refused_clearly(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    import json

    settings = {"agents": {"ghost": {"command": ["svc-no-such-program"], "enabled": True}}}
    (fresh_daemon.home / "settings.json").write_text(json.dumps(settings))
    fresh_daemon.start()
    response = httpx.post(
        f"{fresh_daemon.url}/api/sessions",
        json={"agent": "ghost", "workspace": str(tmp_path)},
        headers=fresh_daemon.owner_headers(),
    )
    assert response.status_code == 400
    assert "'svc-no-such-program' was not found on PATH" in response.text, response.text


async def test_a_process_that_escaped_the_session_does_not_keep_it_open(
    host: Daemon, workspace: Path
) -> None:
    session = create_session(host, workspace)
    term = await Term.open(host, session["id"])
    # The grandchild leaves the session but keeps the PTY as its stdout.
    await term.run("setsid sh -c 'echo escaped=$$; exec sleep 30' & sleep 0.2; exit 4")
    assert await term.expect_event("exited", timeout=10) == {"type": "exited", "exit_code": 4}
    assert get_session(host, session["id"])["status"] == "exited"
    escaped = re.search(rb"escaped=(\d+)", bytes(term.out))
    assert escaped is not None
    os.kill(int(escaped.group(1)), signal.SIGKILL)  # svc does not chase it; the test cleans up
