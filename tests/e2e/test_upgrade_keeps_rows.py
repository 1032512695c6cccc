"""An $SVC_HOME made by a251ce5 (before subagent turns, channels and tunnels moved out of
sessions_app) upgraded by today's code keeps every row (issue 32, acceptance 3).

tests/fixtures/migration/svc-home-a251ce5.sqlite3 was made by a251ce5's own code: its migrations,
then one or more rows in every table the move touches and in those that point at them — sessions
and their chat events, a handover code, a subagent turn and its subagent, two channels, a tunnel,
a bridge request attributed to the turn, a channel chat and a handled event, a preview, a
notification with its delivery, a paired device. The test migrates a copy with `manage.py migrate`
and reads every row back through today's models and a live daemon's API.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx

from harness.daemon import ROOT, Daemon, manage

FIXTURE = ROOT / "tests" / "fixtures" / "migration" / "svc-home-a251ce5.sqlite3"
TURN = "33333333-3333-4333-8333-333333333333"
SUBAGENT = "44444444-4444-4444-8444-444444444444"
PARENT = "11111111-1111-4111-8111-111111111111"

READ_BACK = """
import json
from bridge_app.models import BridgeRequest
from channels_app.models import Channel, ChannelChat, HandledEvent
from notifications_app.models import Delivery, Notification
from previews_app.models import Preview
from remote_app.models import PairedDevice, Tunnel
from sessions_app.models import HandoverCode, Session, SessionEvent, Workspace
from subagents_app.models import Subagent, SubagentTurn
from django.contrib.contenttypes.models import ContentType

sub = Subagent.objects.select_related("turn", "session").get()
print(json.dumps({
    "counts": {m.__name__: m.objects.count() for m in (
        Session, SessionEvent, Workspace, HandoverCode, SubagentTurn, Subagent, Channel, Tunnel,
        BridgeRequest, ChannelChat, HandledEvent, Preview, Notification, Delivery, PairedDevice)},
    "subagent": [str(sub.id), str(sub.turn.id), str(sub.session.id), sub.changes["branch"]],
    "turn_parent": str(SubagentTurn.objects.get().parent_session_id),
    "channels": sorted(Channel.objects.values_list("name", flat=True)),
    "tunnel": Tunnel.objects.get().public_url,
    "content_types": sorted(
        f"{c.app_label}.{c.model}" for c in ContentType.objects.filter(
            model__in=["subagent", "subagentturn", "channel", "tunnel"])),
}))
"""


def test_an_svc_home_made_before_the_move_keeps_every_row(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    shutil.copy(FIXTURE, home / "db.sqlite3")
    manage(home, "migrate", "--noinput", "-v", "0")
    found = json.loads(manage(home, "shell", "-c", READ_BACK).stdout.strip().splitlines()[-1])
    assert found["counts"] == {
        "Session": 2,
        "SessionEvent": 2,
        "Workspace": 1,
        "HandoverCode": 1,
        "SubagentTurn": 1,
        "Subagent": 1,
        "Channel": 2,
        "Tunnel": 1,
        "BridgeRequest": 1,
        "ChannelChat": 1,
        "HandledEvent": 1,
        "Preview": 1,
        "Notification": 1,
        "Delivery": 1,
        "PairedDevice": 1,
    }
    assert found["subagent"] == [
        SUBAGENT,
        TURN,
        "22222222-2222-4222-8222-222222222222",
        "svc/3333/alpha",
    ]
    assert found["turn_parent"] == PARENT
    assert found["channels"] == ["telegram", "web"]
    assert found["tunnel"] == "https://vps.example"
    assert found["content_types"] == [
        "channels_app.channel",
        "remote_app.tunnel",
        "subagents_app.subagent",
        "subagents_app.subagentturn",
    ]

    daemon = Daemon(home).start()
    try:
        owner = daemon.owner_headers()
        turns = httpx.get(f"{daemon.url}/api/subagent-turns", headers=owner).json()
        assert [t["turn_id"] for t in turns] == [TURN]
        usage = httpx.get(f"{daemon.url}/api/usage?group_by=turn", headers=owner).json()
        assert [(row["turn_id"], row["input_tokens"]) for row in usage] == [(TURN, 120)]
    finally:
        daemon.stop()
