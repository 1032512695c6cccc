"""A fleet over TLS (contract §18, docs/fleet-setup.md), against a private redis-server whose plain
port is closed and a private PostgreSQL that rejects every connection without TLS, both started
here (harness/tls_services.py). Two members — Redis `rediss://` with the CA in the URL, PostgreSQL
`sslmode=verify-full` for one and `sslmode=require` for the other — see each other online, every
database connection they hold is encrypted, and a shell on one is started and typed into from the
other (the signed bus and a Streams relay). The bus, a relay and the Redis channel layer svc
uses outside a fleet work over TLS; the URL's TLS options reach libpq beside a member's search path.
Refused: a plain connection to either server, and a member whose URL lacks the CA (its `fleet`
status says the certificate failed).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dj_database_url
import psycopg
import pytest
import redis
from channels_redis.core import RedisChannelLayer
from django.db.utils import ConnectionHandler

from fleet_app import conf as fleet_conf
from fleet_app.bus import Bus
from fleet_app.conf import FleetConfig
from fleet_app.relay_streams import Relay
from harness.daemon import Daemon, manage
from harness.fleet import Fleet, api, wait_for
from harness.termclient import Term
from harness.tls_services import TlsPostgres, TlsRedis, certificates, tls_postgres, tls_redis
from svcproject.settings import channel_layers

BOTH = ("a", "b")
SECRET = "fleet-secret-" + "t" * 32


@dataclass
class TlsFleet:
    fleet: Fleet
    redis: TlsRedis
    postgres: TlsPostgres


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsFleet]:
    root = tmp_path_factory.mktemp("fleet-tls")
    with (
        certificates(root / "certs") as certs,
        tls_redis(certs) as server,
        tls_postgres(certs) as database,
    ):
        fleet = Fleet(
            root,
            database.url("verify-full"),
            {"SVC_REDIS_URL": server.url, "SVC_REDIS_PREFIX": f"svc-tls-{secrets.token_hex(4)}"},
        )
        try:
            fleet.add("a")
            fleet.add("b", env={"DATABASE_URL": database.url("require")})
            for member in fleet.members.values():
                wait_for(lambda d=member.daemon: both_online(d), bool)
            yield TlsFleet(fleet, server, database)
        finally:
            fleet.stop()


def machines(daemon: Daemon) -> list[dict]:
    response = api(daemon, "GET", "/api/machines")
    assert response.status_code == 200, response.text
    return response.json()


def statuses(rows: list[dict]) -> dict[str, str]:
    return {row["name"]: row["status"] for row in rows}


def both_online(daemon: Daemon) -> bool:
    seen = statuses(machines(daemon))
    return all(seen.get(name) == "online" for name in BOTH)


def fleet_status(daemon: Daemon) -> dict[str, str]:
    response = api(daemon, "GET", "/api/status")
    assert response.status_code == 200, response.text
    return response.json()["fleet"]


def test_two_members_see_each_other_online_over_tls(tls: TlsFleet) -> None:
    ids = {name: tls.fleet.members[name].machine_id for name in BOTH}
    for name in BOTH:
        daemon = tls.fleet.daemon(name)
        rows = machines(daemon)
        assert {row["name"]: row["id"] for row in rows if row["name"] in BOTH} == ids
        assert [row["name"] for row in rows if row["self"]] == [name]
        # The bus (pub/sub and the relays' client) is connected to the TLS-only port.
        assert fleet_status(daemon) == {
            "machine": ids[name],
            "status": "online",
            "detail": f"connected to Redis at 127.0.0.1:{tls.redis.port}",
        }


def test_every_database_connection_of_the_members_is_encrypted(tls: TlsFleet) -> None:
    for name in BOTH:  # each has its connections open: its heartbeat renews its row
        assert machines(tls.fleet.daemon(name))
    rows = tls.fleet.sql(
        "SELECT s.ssl, s.version FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) "
        "WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()"
    )
    assert len(rows) >= 2, rows  # both members' heartbeats, at least
    assert all(ssl and version.startswith("TLS") for ssl, version in rows), rows


async def test_a_shell_on_b_is_started_and_typed_into_from_a_over_tls(
    tls: TlsFleet, tmp_path: Path
) -> None:
    # The request travels the signed bus and the terminal's bytes a Streams relay: both rediss://.
    a, b = tls.fleet.daemon("a"), tls.fleet.daemon("b")
    work = tmp_path / "work-b"
    work.mkdir()
    made = api(b, "POST", "/api/workspaces", json={"path": str(work)})
    assert made.status_code == 201, made.text
    started = api(
        a, "POST", "/api/sessions", json={"machine": "b", "agent": "shell", "workspace": str(work)}
    )
    assert started.status_code == 201, started.text
    sid = started.json()["id"]
    assert started.json()["machine"] == tls.fleet.members["b"].machine_id
    try:
        # A opens the terminal of whatever session its merged list says another member owns.
        wait_for(
            lambda: [row["id"] for row in api(a, "GET", "/api/sessions").json()],
            lambda ids: sid in ids,
        )
        term = await Term.open(a, sid)
        try:
            await term.run("echo where=$HOME")
            await term.expect(f"where={tls.fleet.members['b'].home.parent / 'home'}".encode())
        finally:
            await term.close()
    finally:
        stopped = api(a, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})
        assert stopped.status_code == 200, stopped.text


def test_connections_without_tls_are_refused(tls: TlsFleet, tmp_path: Path) -> None:
    with pytest.raises(psycopg.OperationalError, match="no encryption"):
        psycopg.connect(tls.postgres.url("disable"), connect_timeout=5).close()
    plain = redis.Redis(host="127.0.0.1", port=tls.redis.port, socket_timeout=3)
    with pytest.raises(redis.ConnectionError):
        plain.ping()  # the TLS port closes a plain connection; the plain port is closed
    plain.close()
    # A member given a plain DATABASE_URL cannot even migrate its schema, and says why.
    home = tmp_path / "svc"
    home.mkdir()
    env = {"DATABASE_URL": tls.postgres.url("disable"), "SVC_REDIS_URL": tls.redis.url}
    refused = manage(home, "migrate", "--noinput", env=env, check=False)
    assert refused.returncode != 0
    assert "pg_hba.conf rejects connection" in refused.stderr
    assert "no encryption" in refused.stderr


async def test_the_bus_and_a_relay_work_over_tls(tls: TlsFleet) -> None:
    prefix = f"svc-tls-bus-{secrets.token_hex(4)}"
    one, two = (Bus(tls.redis.url, prefix, m * 32, SECRET) for m in "12")
    relays: list[Relay] = []
    try:
        for bus in (one, two):
            await bus.start()
            assert bus.status == "online", bus.detail
        assert await one.call(two.machine_id, "ping", {}) == {"pong": True}
        # A relay rides the bus's command client: the same TLS connection pool.
        for side, bus in (("owner", one), ("viewer", two)):
            relay = await Relay.open(
                bus.redis, prefix, "r1", side=side, secret=SECRET, machine_id=bus.machine_id
            )
            relays.append(relay)
        await relays[0].send("bytes", b"over tls")
        assert await asyncio.wait_for(relays[1].recv(), 10) == ("bytes", b"over tls")
    finally:
        for relay in relays:
            await relay.close()
        for bus in (one, two):
            await bus.stop()


async def test_the_channel_layer_as_svc_configures_it_works_over_tls(tls: TlsFleet) -> None:
    # SVC_REDIS_URL's other use: the channel layer several processes of one svc share.
    config = channel_layers(tls.redis.url, f"svc-tls-{secrets.token_hex(4)}")["default"]["CONFIG"]
    layer = RedisChannelLayer(**config)
    try:
        channel = await layer.new_channel()
        await layer.group_add("lists.machines", channel)
        await layer.group_send("lists.machines", {"type": "list.changed"})
        assert await asyncio.wait_for(layer.receive(channel), 10) == {"type": "list.changed"}
    finally:
        await layer.flush()
        await layer.close_pools()


def test_the_database_url_s_tls_options_reach_libpq_beside_the_member_s_schema(
    tls: TlsFleet,
) -> None:
    # What svcproject.settings does with DATABASE_URL: its query options become libpq's, and a
    # member's search path is added to an `options` the URL may already have.
    url = tls.postgres.url("verify-full") + "&options=-c%20statement_timeout%3D5000"
    config = FleetConfig(machine_id="7" * 32, secret=SECRET)
    default = fleet_conf.databases(dj_database_url.parse(url), config)["default"]
    assert default["OPTIONS"] == {
        "sslmode": "verify-full",
        "sslrootcert": str(tls.postgres.ca),
        "options": f"-c statement_timeout=5000 -c search_path={config.schema}",
    }
    # What Django's backend hands psycopg (and so libpq) for that alias, used to connect.
    params = ConnectionHandler({"default": default})["default"].get_connection_params()
    with psycopg.connect(**params) as conn:
        got = conn.execute(
            "SELECT current_setting('search_path'), current_setting('statement_timeout'), "
            "(SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid())"
        ).fetchone()
    assert got == (config.schema, "5s", True)


def test_a_member_that_does_not_trust_the_redis_certificate_says_why(tls: TlsFleet) -> None:
    # The same server, secret and (TLS) database, but no CA in its Redis URL: the system's CAs do
    # not know the fleet's. It starts, serves its own API, and says why the fleet is away.
    stranger = tls.fleet.add("x", env={"SVC_REDIS_URL": tls.redis.url_without_ca})
    try:
        fleet = wait_for(
            lambda: fleet_status(stranger.daemon), lambda f: "certificate" in f["detail"]
        )
        assert fleet["status"] == "unreachable"
        assert fleet["detail"].startswith(f"Redis at 127.0.0.1:{tls.redis.port}: ")
        assert "certificate verify failed" in fleet["detail"]
        assert [row["name"] for row in machines(stranger.daemon) if row["self"]] == ["x"]
    finally:
        tls.fleet.remove("x")
