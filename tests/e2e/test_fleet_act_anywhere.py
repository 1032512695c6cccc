"""Act anywhere and one view (contract §18), three members on this machine sharing one real
PostgreSQL database and one Redis: a shell started on C from A's API runs on C, typed into and
resized from A's /ws; a chat on B driven from A's /ws/chat answers and takes a permission
answer; every member's session list shows every member's sessions; what only a machine itself
may change is refused from another; a machine that is away reads `unreachable`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.daemon import ROOT, Daemon
from harness.fleet import Fleet, api, hosting_fleet, wait_for, workspace_of
from harness.git import feature_repo, git
from harness.mcp import tool
from harness.termclient import Chat, Term
from harness.ws import connect, recv_json


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with hosting_fleet(tmp_path_factory.mktemp("fleet-act")) as running:
        yield running


def sessions_of(daemon: Daemon) -> list[dict]:
    response = api(daemon, "GET", "/api/sessions")
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_shell_started_on_c_from_a_runs_on_c_and_is_typed_into_from_a(
    fleet: Fleet,
) -> None:
    a, c = fleet.daemon("a"), fleet.daemon("c")
    made = api(
        a,
        "POST",
        "/api/sessions",
        json={"machine": "c", "agent": "shell", "workspace": workspace_of(fleet, "c")},
    )
    assert made.status_code == 201, made.text
    row = made.json()
    assert row["machine"] == fleet.members["c"].machine_id and row["machine_name"] == "c"
    sid = row["id"]
    # C hosts it: its own API has the row, A's own database does not.
    assert api(c, "GET", f"/api/sessions/{sid}").json()["status"] == "running"
    assert fleet.sql(f"SELECT count(*) FROM {fleet.members['a'].schema}.sessions_app_session")[
        0
    ] == (0,)

    term = await Term.open(a, sid)
    try:
        await term.run("echo where=$HOME")
        await term.expect(f"where={fleet.members['c'].home.parent / 'home'}".encode())
        await term.ws.send(json.dumps({"type": "resize", "cols": 111, "rows": 33}))
        await term.run("stty size")
        await term.expect(b"33 111")
    finally:
        await term.close()

    # A's row of it, through A's API, and stopping it from A.
    seen = api(a, "GET", f"/api/sessions/{sid[:8]}")
    assert seen.status_code == 200 and seen.json()["machine_name"] == "c", seen.text
    stopped = api(a, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})
    assert stopped.status_code == 200 and stopped.json()["status"] == "exited", stopped.text


async def test_a_chat_on_b_is_driven_from_a_and_takes_a_permission_answer(fleet: Fleet) -> None:
    a, b = fleet.daemon("a"), fleet.daemon("b")
    chat = await Chat.connect(a)
    try:
        opened = await chat.open(machine="b", agent="fake", workspace=workspace_of(fleet, "b"))
        sid = opened["session_id"]
        assert api(b, "GET", f"/api/sessions/{sid}").status_code == 200  # B hosts it
        await chat.send(type="prompt", session_id=sid, text="echo hello from b")
        await chat.next("turn_end", session_id=sid, timeout=20)
        assert "hello from b" in chat.texts()

        await chat.send(type="prompt", session_id=sid, text="permission")
        asked = await chat.next("permission_request", session_id=sid, timeout=20)
        option = asked["options"][0]["option_id"]
        await chat.send(
            type="permission", session_id=sid, request_id=asked["request_id"], option_id=option
        )
        await chat.next("turn_end", session_id=sid, timeout=20)
        assert f"permission: {option}" in chat.texts()
    finally:
        await chat.ws.close()

    # Decided on A's dashboard, recorded on B, and in the fleet's approvals on C.
    rows = wait_for(
        lambda: api(fleet.daemon("c"), "GET", "/api/approvals").json(),
        lambda rows: any(r["session_id"] == sid for r in rows),
    )
    row = next(r for r in rows if r["session_id"] == sid)
    assert row["machine_name"] == "b" and row["decided_by"]["surface"] == "dashboard"
    assert row["decided_by"]["who"].endswith("via a"), row

    # B's permission request reached A's own devices too, marked as B's (one phone, 3 machines).
    relayed = wait_for(
        lambda: api(a, "GET", "/api/notifications", params={"machine": "a"}).json(),
        lambda rows: any(r["session_id"] == sid and r["origin"] == "b" for r in rows),
    )
    notice = next(r for r in relayed if r["session_id"] == sid and r["origin"] == "b")
    assert notice["event"] == "permission_requested" and notice["title"].endswith("(on b)")
    assert notice["url"].startswith(a.url) and notice["url"].endswith(f"#session={sid}")


async def test_every_members_list_shows_every_members_sessions(fleet: Fleet) -> None:
    made = {
        name: api(
            fleet.daemon(name),
            "POST",
            "/api/sessions",
            json={"agent": "shell", "workspace": workspace_of(fleet, name)},
        ).json()["id"]
        for name in "abc"
    }
    for name in "abc":
        daemon = fleet.daemon(name)
        rows = wait_for(
            lambda d=daemon: sessions_of(d),
            lambda rows: {r["id"] for r in rows} >= set(made.values()),
        )
        machine_of = {r["id"]: r["machine_name"] for r in rows}
        assert {m: machine_of[sid] for m, sid in made.items()} == {"a": "a", "b": "b", "c": "c"}
        async with connect(daemon, "/ws/sessions") as ws:
            frame = await recv_json(ws)
        assert {r["id"]: r["machine_name"] for r in frame if r["id"] in made.values()} == {
            sid: m for m, sid in made.items()
        }
    for name, sid in made.items():
        api(fleet.daemon("a"), "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})
        row = api(fleet.daemon(name), "GET", f"/api/sessions/{sid}").json()
        assert row["status"] == "exited", (name, row)


async def test_a_change_on_one_member_reaches_the_others_live_list(fleet: Fleet) -> None:
    a, b = fleet.daemon("a"), fleet.daemon("b")
    async with connect(a, "/ws/sessions") as ws:
        await recv_json(ws)
        sid = api(
            b,
            "POST",
            "/api/sessions",
            json={"agent": "shell", "workspace": workspace_of(fleet, "b")},
        ).json()["id"]
        deadline = time.monotonic() + 10
        while True:
            frame = await recv_json(ws, timeout=max(deadline - time.monotonic(), 0.1))
            if any(r["id"] == sid and r["status"] == "running" for r in frame):
                break
    api(b, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})


def test_what_is_a_machines_own_is_refused_from_another(fleet: Fleet) -> None:
    a = fleet.daemon("a")
    refused = api(
        a,
        "PUT",
        "/api/agents/evil",
        headers={"X-Svc-Machine": "b"},
        json={"command": ["sh"]},
    )
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "not_for_the_fleet"
    unknown = api(a, "GET", "/api/sessions", params={"machine": "nowhere"})
    assert unknown.status_code == 404, unknown.text
    assert "evil" not in [x["name"] for x in api(fleet.daemon("b"), "GET", "/api/agents").json()]


async def test_fleet_reads_cover_every_member(fleet: Fleet) -> None:
    usage = api(fleet.daemon("a"), "GET", "/api/usage", params={"group_by": "day"})
    assert usage.status_code == 200 and "X-Svc-Fleet-Missing" not in usage.headers
    turns = api(fleet.daemon("a"), "GET", "/api/subagent-turns")
    assert turns.status_code == 200 and isinstance(turns.json(), list)
    found = api(fleet.daemon("c"), "GET", "/api/search", params={"q": "hello"})
    assert found.status_code == 200, found.text
    await asyncio.sleep(0)


async def test_a_subagent_diff_on_c_is_reviewed_and_merged_from_a(
    fleet: Fleet, tmp_path: Path
) -> None:
    a, c = fleet.daemon("a"), fleet.daemon("c")
    repo = feature_repo(tmp_path / "repo")
    agents = [{"name": "ff", "agent": "fake", "task": "commit ff.py 3"}]
    made = await tool(c, "initialize_subagents", mode="parallel", cwd=str(repo), agents=agents)
    done = await tool(c, "wait_for_subagents", turn_id=made["turn_id"], timeout_s=120)
    assert done["completed"], done
    run_id = done["reports"][0]["id"]

    turns = api(a, "GET", "/api/subagent-turns").json()
    turn = next(t for t in turns if t["turn_id"] == made["turn_id"])
    assert turn["machine_name"] == "c"
    diff = api(a, "GET", f"/api/subagents/{run_id}/diff")
    assert diff.status_code == 200, diff.text
    assert [f["path"] for f in diff.json()["files"]] == ["ff.py"]
    merged = api(a, "POST", f"/api/subagents/{run_id}/merge")
    assert merged.status_code == 200 and merged.json()["merged"] is True, merged.text
    assert "ff.py" in git(repo, "ls-tree", "--name-only", "feature")
    again = api(a, "GET", f"/api/subagents/{run_id[:8]}/diff")  # by a prefix, as printed
    assert again.status_code == 200, again.text


def test_the_cli_lists_every_members_sessions_with_their_machine(fleet: Fleet) -> None:
    a = fleet.daemon("a")
    sid = api(
        a,
        "POST",
        "/api/sessions",
        json={"machine": "c", "agent": "shell", "workspace": workspace_of(fleet, "c")},
    ).json()["id"]
    env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
    shown = subprocess.run(
        [str(ROOT / "bin" / "svc"), "sessions", "--live"],
        env={**env, "SVC_HOME": str(a.home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    header, *lines = shown.stdout.splitlines()
    assert header.split()[:3] == ["id", "machine", "name"], shown.stdout
    line = next(x for x in lines if x.startswith(sid[:8]))
    assert line.split()[1] == "c", shown.stdout
    api(a, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})


async def test_a_handover_made_on_c_is_picked_up_on_a(fleet: Fleet) -> None:
    a, c = fleet.daemon("a"), fleet.daemon("c")
    sid = api(
        c, "POST", "/api/sessions", json={"agent": "shell", "workspace": workspace_of(fleet, "c")}
    ).json()["id"]
    code = (await tool(c, "prepare_handover", session_id=sid))["code"]
    picked = api(a, "POST", "/api/handover/pickup", json={"code": code})
    assert picked.status_code == 200, picked.text
    assert (picked.json()["id"], picked.json()["machine_name"]) == (sid, "c")
    again = api(a, "POST", "/api/handover/pickup", json={"code": code})
    assert again.status_code == 404, again.text  # used once, on every member
    api(a, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})


async def test_a_browser_cannot_pass_a_decision_off_as_made_on_telegram(fleet: Fleet) -> None:
    """Nor use a prompt key across members: b keeps a's keys for a's chat channels, so a key a
    browser could send through a would let it drop a Telegram message to come."""
    a, b = fleet.daemon("a"), fleet.daemon("b")
    chat = await Chat.connect(a)
    try:
        opened = await chat.open(machine="b", agent="fake", workspace=workspace_of(fleet, "b"))
        sid = opened["session_id"]
        await chat.send(type="prompt", session_id=sid, text="permission", key="x:telegram:u1")
        asked = await chat.next("permission_request", session_id=sid, timeout=20)
        forged = {"surface": "telegram", "who": "@grace (42)"}
        await chat.send(
            type="permission",
            session_id=sid,
            request_id=asked["request_id"],
            option_id=asked["options"][0]["option_id"],
            **{"as": forged},
        )
        await chat.next("turn_end", session_id=sid, timeout=20)
    finally:
        await chat.ws.close()
    rows = wait_for(
        lambda: api(b, "GET", "/api/approvals", params={"machine": "b"}).json(),
        lambda rows: any(r["session_id"] == sid for r in rows),
    )
    decided = next(r for r in rows if r["session_id"] == sid)["decided_by"]
    assert decided == {"surface": "dashboard", "who": "owner via a"}, decided
    assert not [e for e in chat.events if e["kind"] == "prompt_received"]  # the key went no further
    keys = fleet.sql(
        f"SELECT count(*) FROM {fleet.members['b'].schema}.sessions_app_promptkey "
        "WHERE session_id = %s",
        sid,
    )
    assert keys == [(0,)]


def test_naming_another_member_does_not_get_round_the_pickup_limit(fleet: Fleet) -> None:
    """Issue 41 (low): more than 10 failed pickups a minute answer 429 (contract §4) on the member
    asked, whichever member the pickups name (X-Svc-Machine or ?machine=): the member named
    answers a forwarded pickup without counting it, so the one asked must. Last in this module:
    b's pickups stay locked for a minute."""
    b = fleet.daemon("b")
    named = [{"headers": {"X-Svc-Machine": "c"}}] * 6 + [{"params": {"machine": "c"}}] * 5
    answers = [
        api(b, "POST", "/api/handover/pickup", json={"code": "ZZZZ"}, **how).status_code
        for how in named
    ]
    assert answers == [404] * 10 + [429], answers
    here = api(b, "POST", "/api/handover/pickup", json={"code": "ZZZZ"})
    assert here.status_code == 429  # and on the member itself
