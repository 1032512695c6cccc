"""A Redis writer's bytes on a fleet (issue 41, finding 4): two members on one real PostgreSQL and
one Redis. Whoever can write that Redis — a plain redis-py client, no svc code, no fleet secret —
PUBLISHes deeply nested JSON and a huge message on the bus's channels, and XADDs the same to the
streams of a terminal relay. Before, one nested message killed the bus reader on both members
(the parser's RecursionError was not caught and ended the reconnect loop) while `/api/machines`
still said online, and one entry ended a relay's reader so the terminal went silent. Now each
member drops what it cannot read, logs it once, and goes on: a cross-member action still works
and the terminal's bytes still flow."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from harness.fleet import Fleet, api, hosting_fleet, statuses, workspace_of
from harness.termclient import Term

DEPTH = 100_000
DEEP = b"[" * DEPTH + b"]" * DEPTH
DEEP_OBJECT = b'{"from":' * DEPTH + b"1" + b"}" * DEPTH
HUGE = b'{"from":"' + b"x" * (16 << 20) + b'"}'  # 16 MiB: under Redis' 32 MiB pub/sub buffer
SIGNATURE = b"0" * 64  # shaped like the HMAC a member checks, so the payload gets looked at


def forged(payload: bytes) -> bytes:
    return SIGNATURE + b"." + payload


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with hosting_fleet(tmp_path_factory.mktemp("fleet-untrusted"), names=("a", "b")) as running:
        yield running


@pytest.fixture
def writer(fleet: Fleet) -> Iterator[redis.Redis]:
    """Whoever can write the fleet's Redis: a plain client, nothing of svc's."""
    client = redis.Redis.from_url(fleet.redis["SVC_REDIS_URL"])
    yield client
    client.close()


def prefix(fleet: Fleet) -> str:
    return fleet.redis["SVC_REDIS_PREFIX"]


def shell_on(fleet: Fleet, machine: str, via: str) -> str:
    made = api(
        fleet.daemon(via),
        "POST",
        "/api/sessions",
        json={"machine": machine, "agent": "shell", "workspace": workspace_of(fleet, machine)},
    )
    assert made.status_code == 201, made.text
    return made.json()["id"]


def test_nested_and_huge_bus_messages_leave_both_members_listening(
    fleet: Fleet, writer: redis.Redis
) -> None:
    channels = [f"{prefix(fleet)}:fleet:all"] + [
        f"{prefix(fleet)}:fleet:m:{member.machine_id}" for member in fleet.members.values()
    ]
    for channel in channels:
        for payload in (DEEP, forged(DEEP), forged(DEEP_OBJECT), forged(HUGE)):
            assert writer.publish(channel, payload) >= 1, channel  # a member was listening
    for _ in range(20):  # a flood of the same: logged once, not once per message
        writer.publish(channels[0], forged(DEEP))

    # Each member still hears the other: a shell made on the other member through its API goes
    # over the bus (a call and its reply), both ways.
    for via, there in (("a", "b"), ("b", "a")):
        sid = shell_on(fleet, there, via=via)
        stopped = api(fleet.daemon(via), "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})
        assert stopped.status_code == 200, stopped.text
    for member in fleet.members.values():
        assert statuses(member.daemon) == {"a": "online", "b": "online"}
        log = member.daemon.log()
        assert "RecursionError" not in log and "Traceback" not in log
        dropped = [line for line in log.splitlines() if "dropped a message on" in line]
        assert 1 <= len(dropped) <= 3, dropped  # one line per reason a minute


def test_a_nested_json_body_through_the_fleet_is_400_not_500(fleet: Fleet) -> None:
    """The fleet's routing reads `machine` from a body before DRF does: it must not be the 500."""
    refused = api(
        fleet.daemon("a"),
        "POST",
        "/api/sessions",
        content=DEEP,
        headers={"Content-Type": "application/json"},
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "parse_error"


async def test_nested_and_huge_relay_entries_leave_the_terminal_flowing(
    fleet: Fleet, writer: redis.Redis
) -> None:
    a = fleet.daemon("a")
    sid = shell_on(fleet, "b", via="a")
    term = await Term.open(a, sid)  # A's viewer, B's shell: one relay, two streams
    try:
        await term.run("echo before-$((1+1))")
        await term.expect(b"before-2")
        streams = writer.keys(f"{prefix(fleet)}:fleet:s:*")
        assert {key.rsplit(b":", 1)[1] for key in streams} == {b"up", b"down"}, streams
        for key in streams:
            for entry in (
                {b"m": DEEP, b"d": b"", b"s": SIGNATURE},
                {b"m": DEEP_OBJECT, b"d": b"", b"s": SIGNATURE},
                {b"m": json.dumps({"from": "x"}).encode(), b"d": HUGE, b"s": SIGNATURE},
            ):
                writer.xadd(key, entry)
        await term.run("echo after-$((40+2))")
        await term.expect(b"after-42")
        await term.ws.send(json.dumps({"type": "resize", "cols": 101, "rows": 31}))
        await term.run("stty size")
        await term.expect(b"31 101")
    finally:
        await term.close()
    api(a, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})
    for member in fleet.members.values():
        assert "RecursionError" not in member.daemon.log()
