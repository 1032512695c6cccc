"""A fleet's faults (contract §18 "Faults"), three members sharing one real PostgreSQL database and
a Redis of the test's own: a member killed with SIGKILL reads `unreachable` everywhere — its
sessions too, not `exited` — and comes back with them running; Redis gone, every member goes on
serving its own sessions and says the fleet is unreachable, and once Redis is back the lists
converge by themselves; a member with another secret never joins and can act on nobody. Stop all
on one member stops every member's sessions, and names a member that is away."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from harness.daemon import ROOT, Daemon
from harness.fleet import (
    Fleet,
    Member,
    TcpProxy,
    api,
    hosting_fleet,
    statuses,
    wait_for,
    workspace_of,
)
from harness.own_redis import OwnRedis
from harness.termclient import Term

ALL_ONLINE = {"a": "online", "b": "online", "c": "online"}
FLEET_MISSING = "X-Svc-Fleet-Missing"


@pytest.fixture(scope="module")
def redis() -> Iterator[OwnRedis]:
    server = OwnRedis().start()
    yield server
    server.kill()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, redis: OwnRedis) -> Iterator[Fleet]:
    with hosting_fleet(tmp_path_factory.mktemp("fleet-faults"), redis=redis.env()) as running:
        yield running


def status_on(daemon: Daemon, sid: str) -> str | None:
    rows = api(daemon, "GET", "/api/sessions").json()
    return next((r["status"] for r in rows if r["id"] == sid), None)


def shell_on(fleet: Fleet, name: str, via: str) -> str:
    made = api(
        fleet.daemon(via),
        "POST",
        "/api/sessions",
        json={"machine": name, "agent": "shell", "workspace": str(fleet.root / f"work-{name}")},
    )
    assert made.status_code == 201, made.text
    return made.json()["id"]


async def test_a_killed_member_is_unreachable_with_its_sessions_and_back_with_them(
    fleet: Fleet,
) -> None:
    a, c = fleet.daemon("a"), fleet.daemon("c")
    sid = shell_on(fleet, "b", via="a")
    wait_for(lambda: status_on(a, sid), lambda s: s == "running")

    fleet.kill("b")  # unreachable within 15 s of its last beat: waited for 20 s at most
    for daemon in (a, c):
        wait_for(lambda d=daemon: status_on(d, sid), lambda s: s == "unreachable", timeout=20)
        assert statuses(daemon)["b"] == "unreachable"
    refused = api(a, "DELETE", f"/api/sessions/{sid}")
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "machine_unreachable"
    assert "machine b is unreachable" in refused.json()["error"]["message"]

    fleet.start("b")  # its holder kept the shell: b takes it back (contract §17)
    for daemon in (a, c):
        wait_for(lambda d=daemon: statuses(d), lambda s: s == ALL_ONLINE)
        wait_for(lambda d=daemon: status_on(d, sid), lambda s: s == "running")
    term = await Term.open(a, sid)
    try:
        await term.run("echo back-$((40+2))")
        await term.expect(b"back-42")
    finally:
        await term.close()
    api(a, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})


def stop_all_with_bin_svc(member: Member) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
    return subprocess.run(
        [str(ROOT / "bin" / "svc"), "sessions", "--stop-all"],
        env={**env, **member.daemon.env, "SVC_HOME": str(member.home)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def by_name(answer: dict) -> dict[str, dict]:
    return {row["machine_name"]: row for row in answer["machines"]}


def test_stop_all_on_a_stops_every_members_sessions_and_only_for_the_owner(
    fleet: Fleet,
) -> None:
    """Issue 42, path 4: the README says Stop all ends every session; in a fleet it ended the
    asked member's alone. Each member stops its own, asked over the signed bus."""
    a, b = fleet.daemon("a"), fleet.daemon("b")
    made = {name: shell_on(fleet, name, via="a") for name in ("a", "b", "c")}
    made["b-chat"] = api(
        a,
        "POST",
        "/api/sessions",
        json={
            "machine": "b",
            "agent": "fake",
            "kind": "chat",
            "workspace": workspace_of(fleet, "b"),
        },
    ).json()["id"]
    for sid in made.values():
        wait_for(lambda sid=sid: status_on(a, sid), lambda s: s == "running")
    # Who may: the owner (and paired devices, docs/security.md); a stranger and the MCP token
    # may not, on any member, and nothing stops.
    for headers in ({}, {"Authorization": f"Bearer {a.mcp_token}"}):
        refused = httpx.post(f"{a.url}/api/sessions/stop_all", headers=headers, timeout=30)
        assert refused.status_code == 401, refused.text
    assert status_on(b, made["b"]) == "running"

    stopped = api(a, "POST", "/api/sessions/stop_all")
    assert stopped.status_code == 200, stopped.text
    answer = stopped.json()
    assert answer["stopped"] == 4, answer
    rows = by_name(answer)
    assert [rows[n]["stopped"] for n in ("a", "b", "c")] == [1, 2, 1], answer
    assert answer["machines"][0]["machine_name"] == "a", answer  # this machine first
    for name, sid in made.items():
        owner = fleet.daemon(name.split("-")[0])  # each member's own word for its session
        row = api(owner, "GET", f"/api/sessions/{sid}").json()
        assert (row["status"], row["end_reason"]) == ("exited", "stopped"), (name, row)

    again = stop_all_with_bin_svc(fleet.members["a"])
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("no session was running (a 0, b 0, c 0"), again.stdout


def test_stop_all_names_a_member_that_is_away_and_stops_the_rest(fleet: Fleet) -> None:
    a = fleet.daemon("a")
    on_b, on_c = shell_on(fleet, "b", via="a"), shell_on(fleet, "c", via="a")
    fleet.kill("c")  # at once: before the others have seen it go
    cli = stop_all_with_bin_svc(fleet.members["a"])
    assert cli.returncode == 1, cli.stdout
    assert cli.stdout.startswith("stopped 1 session (a 0, b 1"), cli.stdout
    assert "not stopped: machine c is unreachable" in cli.stderr, cli.stderr
    assert "its sessions keep running there" in cli.stderr, cli.stderr
    assert api(fleet.daemon("b"), "GET", f"/api/sessions/{on_b}").json()["status"] == "exited"

    wait_for(lambda: statuses(a).get("c"), lambda s: s == "unreachable", timeout=25)
    stopped = api(a, "POST", "/api/sessions/stop_all")  # c now known to be away
    assert stopped.status_code == 200, stopped.text
    row = by_name(stopped.json())["c"]
    assert row["stopped"] is None and "machine c is unreachable" in row["error"], row
    assert "c" in stopped.headers[FLEET_MISSING].split(", ")

    fleet.start("c")  # its holder kept the shell: nothing stopped it
    wait_for(lambda: statuses(a), lambda s: all(s.get(n) == "online" for n in "abc"))
    assert api(fleet.daemon("c"), "GET", f"/api/sessions/{on_c}").json()["status"] == "running"
    api(fleet.daemon("c"), "DELETE", f"/api/sessions/{on_c}", params={"wait": "1"})


async def test_without_redis_members_serve_their_own_and_converge_once_it_is_back(
    fleet: Fleet, redis: OwnRedis
) -> None:
    a, b = fleet.daemon("a"), fleet.daemon("b")
    own = shell_on(fleet, "a", via="a")
    term = await Term.open(a, own)
    try:
        redis.kill()
        for daemon in (a, b):
            wait_for(
                lambda d=daemon: api(d, "GET", "/api/status").json()["fleet"]["status"],
                lambda s: s == "unreachable",
            )
        # Each member goes on: its own terminal types, its own sessions start and list.
        await term.run("echo alone-$((6*7))")
        await term.expect(b"alone-42")
        during = shell_on(fleet, "b", via="b")
        assert status_on(b, during) == "running"

        redis.start()  # the lists converge within 10 s of Redis returning
        wait_for(lambda: status_on(a, during), lambda s: s == "running", timeout=10)
        for daemon in (a, b):
            assert api(daemon, "GET", "/api/status").json()["fleet"]["status"] == "online"
    finally:
        await term.close()
    for sid, name in ((own, "a"), (during, "b")):
        api(fleet.daemon(name), "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})


def test_a_member_with_another_secret_never_joins_and_acts_on_nobody(fleet: Fleet) -> None:
    a = fleet.daemon("a")
    sid = shell_on(fleet, "a", via="a")
    intruder = fleet.add("d", secret="another secret that is long enough: 0123456789").daemon
    try:
        assert statuses(intruder) == {"d": "online"}
        assert "d" not in statuses(a)
        asked = api(
            intruder,
            "POST",
            "/api/sessions",
            json={"machine": "a", "agent": "shell", "workspace": str(fleet.root / "work-a")},
        )
        assert asked.status_code == 404, asked.text
        assert api(intruder, "GET", f"/api/sessions/{sid}").status_code == 404
        assert sid not in [r["id"] for r in api(intruder, "GET", "/api/sessions").json()]
        d_id = fleet.members["d"].machine_id
        dropped = f"dropped a message on the broadcast channel from {d_id} (unverified): bad"
        wait_for(lambda: a.log(), lambda log: dropped in log, timeout=10)
    finally:
        fleet.remove("d")
    api(a, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})


async def test_a_member_whose_database_is_gone_keeps_its_sessions_and_catches_up(
    fleet: Fleet,
) -> None:
    proxy = TcpProxy(("127.0.0.1", 5432))
    try:
        member = fleet.add("e", env={"DATABASE_URL": proxy.url_for(fleet.database_url)})
        e, a = member.daemon, fleet.daemon("a")
        (fleet.root / "work-e").mkdir()
        api(e, "POST", "/api/workspaces", json={"path": str(fleet.root / "work-e")})
        sid = shell_on(fleet, "e", via="e")
        term = await Term.open(e, sid)
        try:
            proxy.cut()
            gone = api(e, "GET", f"/api/sessions/{sid}")
            assert gone.status_code == 503, gone.text
            assert gone.json()["error"]["code"] == "database_unavailable"
            await term.run("echo still-$((20+22))")  # its session runs on
            await term.expect(b"still-42")
            wait_for(lambda: statuses(a).get("e"), lambda s: s == "unreachable", timeout=25)
            proxy.restore()
            wait_for(lambda: statuses(a).get("e"), lambda s: s == "online", timeout=20)
            wait_for(lambda: status_on(a, sid), lambda s: s == "running")
            renamed = api(e, "PATCH", f"/api/sessions/{sid}", json={"title": "after the outage"})
            assert renamed.status_code == 200, renamed.text
            wait_for(
                lambda: {r["id"]: r["title"] for r in api(a, "GET", "/api/sessions").json()},
                lambda titles: titles.get(sid) == "after the outage",
            )
        finally:
            await term.close()
        api(e, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})
    finally:
        if "e" in fleet.members:
            fleet.remove("e")
        proxy.close()
