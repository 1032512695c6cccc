"""Agents and workspaces edited through /api/ (contract §1, §10), as the dashboard's Settings view
does: `PUT /api/agents/{name}` writes the agent's entry in settings.json (an override for a
built-in) and keeps every key it does not know; `DELETE` drops the entry; refusals come back in
the usual error shape with settings.json untouched. `PATCH /api/workspaces/{id}` renames a
workspace: its name lives in the database, settings.json lists paths only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from core import config

pytestmark = pytest.mark.django_db

SETTINGS: dict[str, Any] = {
    "future_feature": {"keep": True},
    "agents": {
        "helper": {"command": ["sh"], "enabled": True, "team_note": "an unknown key, kept"},
        "claude": {"enabled": False},
    },
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A settings.json of the test's own; the mirror follows it."""
    from core import settings_store as services

    home = tmp_path / "home"
    monkeypatch.setenv("SVC_HOME", str(home))
    config.write_settings(json.loads(json.dumps(SETTINGS)))
    services.settings_sync()
    return home


@pytest.fixture
def api(home: Path) -> Client:
    return Client(headers={"Authorization": f"Bearer {config.current_auth().owner_token}"})


def on_disk(home: Path) -> dict[str, Any]:
    return json.loads((home / "settings.json").read_text())


def put(api: Client, name: str, body: dict[str, Any]) -> Any:
    return api.put(f"/api/agents/{name}", json.dumps(body), content_type="application/json")


def test_an_edit_replaces_the_known_keys_and_keeps_the_unknown_ones(
    api: Client, home: Path
) -> None:
    answer = put(api, "helper", {"enabled": False, "command": ["sh", "-c", "exec cat"]})
    assert answer.status_code == 200, answer.content
    assert answer.json()["enabled"] is False
    assert answer.json()["command"] == ["sh", "-c", "exec cat"]
    stored = on_disk(home)
    assert stored["agents"]["helper"] == {
        "command": ["sh", "-c", "exec cat"],
        "enabled": False,
        "team_note": "an unknown key, kept",
    }
    assert stored["agents"]["claude"] == {"enabled": False}  # other agents untouched
    assert stored["future_feature"] == {"keep": True}
    rows = {a["name"]: a for a in api.get("/api/agents").json()}
    assert rows["helper"]["enabled"] is False

    # enabled null (the form's "when found"): the key goes, the command decides.
    answer = put(api, "helper", {"enabled": None, "command": ["sh"], "env": {"A_B": "x y"}})
    assert answer.status_code == 200, answer.content
    assert on_disk(home)["agents"]["helper"] == {
        "command": ["sh"],
        "env": {"A_B": "x y"},
        "team_note": "an unknown key, kept",
    }
    assert answer.json()["enabled"] is True  # sh is found


def test_a_builtin_gets_an_override_entry_and_loses_it_again(api: Client, home: Path) -> None:
    answer = put(api, "shell", {"enabled": False})
    assert answer.status_code == 201, answer.content
    assert answer.json() | {"source": "both", "enabled": False} == answer.json()
    assert on_disk(home)["agents"]["shell"] == {"enabled": False}
    assert api.get("/api/agents/shell").json()["enabled"] is False

    assert api.delete("/api/agents/shell").status_code == 204
    assert "shell" not in on_disk(home)["agents"]
    shell = api.get("/api/agents/shell").json()
    assert shell["enabled"] is True and shell["source"] == "builtin"
    assert api.delete("/api/agents/shell").json()["error"]["status"] == 404


def test_a_new_agent_is_added_and_refusals_leave_the_file_alone(api: Client, home: Path) -> None:
    before = (home / "settings.json").read_text()
    refusals = [
        ("mini", {"enabled": True}, "give it a command"),  # not a built-in: needs a command
        ("Bad Name", {"command": ["sh"]}, "invalid agent name"),
        ("mini", {"command": ["sh"], "env": {"NOT OK": "1"}}, "not a variable name"),
        ("mini", {"command": "sh"}, "command"),  # a serializer refusal names the field
    ]
    for name, body, problem in refusals:
        answer = put(api, name, body)
        assert answer.status_code == 400, (name, body)
        error = answer.json()["error"]
        assert error["status"] == 400 and problem in error["message"], error
    assert (home / "settings.json").read_text() == before

    # `true` ends at once: the save's ACP check fails fast (`sh` would wait out its 15 s).
    answer = put(api, "mini", {"command": ["sh", "-c", "exec cat"], "acp_command": ["true"]})
    assert answer.status_code == 201, answer.content
    assert answer.json()["source"] == "settings"
    assert on_disk(home)["agents"]["mini"] == {
        "command": ["sh", "-c", "exec cat"],
        "acp_command": ["true"],
    }
    assert api.get("/api/agents/nobody").status_code == 404


def test_a_workspace_is_renamed_in_the_database_and_stays_listed_by_path(
    api: Client, home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    made = api.post("/api/workspaces", {"path": str(folder)}, content_type="application/json")
    wid = made.json()["id"]
    assert made.json()["name"] == "project"

    answer = api.patch(
        f"/api/workspaces/{wid}", {"name": "  The project "}, content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["name"] == "The project"
    assert [w["name"] for w in api.get("/api/workspaces").json() if w["id"] == wid] == [
        "The project"
    ]
    assert on_disk(home)["workspaces"] == [str(folder)]
    assert on_disk(home)["future_feature"] == {"keep": True}

    blank = api.patch(f"/api/workspaces/{wid}", {"name": ""}, content_type="application/json")
    assert blank.json()["name"] == "project"  # a blank name: the folder's own
    missing = api.patch("/api/workspaces/999999", {"name": "x"}, content_type="application/json")
    assert missing.json()["error"]["status"] == 404

    assert api.delete(f"/api/workspaces/{wid}").status_code == 204
    assert on_disk(home)["workspaces"] == []
    assert api.get("/api/workspaces").json() == []
