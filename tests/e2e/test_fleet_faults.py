"""A fleet's faults (contract §18 "Faults"), three members sharing one real PostgreSQL database and
a Redis of the test's own: a member killed with SIGKILL reads `unreachable` everywhere — its
sessions too, not `exited` — and comes back with them running; Redis gone, every member goes on
serving its own sessions and says the fleet is unreachable, and once Redis is back the lists
converge by themselves; a member with another secret never joins and can act on nobody."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.daemon import Daemon
from harness.fleet import Fleet, TcpProxy, api, hosting_fleet, statuses, wait_for
from harness.own_redis import OwnRedis
from harness.termclient import Term

ALL_ONLINE = {"a": "online", "b": "online", "c": "online"}


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
