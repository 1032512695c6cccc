"""The issue's attack on a fleet (issue 41, finding 2): two members on one real PostgreSQL and one
Redis. Whoever can write that database — psycopg, no svc code, no token, no fleet secret — flips
a browser's waiting pairing on member A to `approved`, takes the cookie A hands out, and through
A's remote listener starts a shell on member B and runs `id` there. Before the rows were sealed,
the shell ran; now A hands out no cookie, and nothing the browser does reaches B."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets

from harness.fleet import Fleet, api, hosting_fleet, workspace_of
from tests.e2e.test_remote_tunnel import Remote

DOCUMENT = {"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with hosting_fleet(tmp_path_factory.mktemp("fleet-db-writer"), names=("a", "b")) as running:
        yield running


def page_key_of(phone: httpx.Client) -> str:
    """What a paired browser's dashboard page carries ("" for a page that is not the dashboard)."""
    page = phone.get("/", headers=DOCUMENT).text
    marker = 'name="svc-page-key" content="'
    return page.split(marker, 1)[1].split('"', 1)[0] if marker in page else ""


async def run_in_a_shell_on(
    fleet: Fleet, remote: Remote, phone: httpx.Client, machine: str, line: str
) -> str:
    """The attacker's whole way, with whatever the browser was given: a shell started on
    `machine` through A's remote listener, `line` typed into it. Where it stopped, if it did."""
    key = page_key_of(phone)
    made = phone.post(
        "/api/sessions",
        headers={"X-Svc-Page-Key": key},
        json={"machine": machine, "agent": "shell", "workspace": workspace_of(fleet, machine)},
    )
    if made.status_code != 201:
        return f"no shell: {made.status_code} {made.text}"
    async with websockets.connect(
        f"ws://127.0.0.1:{remote.port}/ws?session_id={made.json()['id']}",
        subprotocols=[websockets.Subprotocol(f"svc.page.{key}")],
        additional_headers={"Cookie": f"svc_remote={phone.cookies.get('svc_remote', '')}"},
        origin=websockets.Origin(remote.url),
        open_timeout=10,
    ) as terminal:
        await asyncio.wait_for(terminal.recv(), 10)  # the scrollback: the shell is there
        await terminal.send(line.encode() + b"\r")
        await asyncio.sleep(3)
    return "typed"


async def test_an_approval_written_into_the_fleets_database_starts_no_shell_on_another_member(
    fleet: Fleet,
) -> None:
    a, member_a = fleet.daemon("a"), fleet.members["a"]
    remote = Remote(a, a.auth()["remote_port"])
    ran = Path(workspace_of(fleet, "b")) / "ran-id"
    with remote.client() as phone:
        started = phone.post("/pair/start").json()
        flipped = fleet.sql(  # the row of the code this browser shows
            f"UPDATE {member_a.schema}.remote_app_pairingrequest "
            "SET status = 'approved', approved_via = 'api' "
            "WHERE code = %s AND status = 'pending' RETURNING code",
            started["code"],
        )
        assert flipped == [(started["code"],)]
        status = phone.get("/pair/status", params={"pair_id": started["pair_id"]}).json()
        how_far = await run_in_a_shell_on(fleet, remote, phone, "b", f"id > {ran}")
        for _ in range(20):
            if ran.exists():
                break
            time.sleep(0.1)
        assert not ran.exists(), f"a shell on b ran `id` for the database: {ran.read_text()}"
        assert "svc_remote" not in phone.cookies and status == {"status": "pending"}, status
        assert how_far.startswith("no shell: 401"), how_far
    on_b = api(fleet.daemon("b"), "GET", "/api/sessions").json()
    assert not [s for s in on_b if s["agent"] == "shell"], on_b

    # The owner's own approval, from A's API, still pairs: the way the phone is meant to pair.
    with remote.client() as phone:
        paired = remote.pair(phone)
        assert paired["page_key"] and page_key_of(phone) == paired["page_key"]
