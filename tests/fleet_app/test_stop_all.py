"""Stop all's fleet answer (fleet_app/stop_all.py) and how the command line says it (cli/views.py),
with answers in and answers out: every member named, with what it stopped or why it did not."""

from __future__ import annotations

import json

from cli import views
from fleet_app import stop_all
from fleet_app.bus import FleetUnreachable
from fleet_app.outbound import Reply


def reply(status: int, data: object) -> Reply:
    return Reply(status, "application/json", json.dumps(data).encode())


def test_every_member_is_named_with_what_it_stopped_or_why_not() -> None:
    rows = [
        stop_all.reply_row("m-c", "c", FleetUnreachable("m-c", "no answer within 60 s")),
        stop_all.reply_row("m-b", "b", reply(200, {"stopped": 2})),
        stop_all.reply_row("m-d", "d", reply(403, {"error": {"message": "not for paired"}})),
    ]
    answer = stop_all.answer(stop_all.done("m-a", "a", {"stopped": 1}), rows)
    assert answer["stopped"] == 3
    assert [(r["machine_name"], r["stopped"]) for r in answer["machines"]] == [
        ("a", 1),
        ("b", 2),
        ("c", None),
        ("d", None),
    ]
    assert answer["machines"][2]["error"] == (
        "machine c is unreachable (no answer within 60 s): its sessions keep running there"
    )
    assert answer["machines"][3]["error"] == "machine d answered 403: not for paired"
    assert stop_all.missing(answer["machines"]) == ["c", "d"]

    assert views.stopped_line(answer) == "stopped 3 sessions (a 1, b 2)"
    assert views.not_stopped(answer) == [r["error"] for r in answer["machines"][2:]]


def test_a_daemon_alone_says_it_as_before() -> None:
    assert views.stopped_line({"stopped": 1}) == "stopped 1 session"
    assert views.stopped_line({"stopped": 0}) == "no session was running"
    assert views.not_stopped({"stopped": 0}) == []
