"""/api/: workspaces, profiles (keys redacted), agents, settings, schema, errors; admin pages."""

from __future__ import annotations

import json
import os
import time

import httpx
import pytest

from harness.daemon import Daemon, migrated_home

SECRET = "sk-test-very-secret-key"
SETTINGS = {
    "future_feature": {"keep": True},
    "profiles": {
        "work": {
            "provider": "openai-chat",
            "base_url": "https://api.openai.com/v1",
            "api_key": SECRET,
            "models": ["gpt-x"],
            "model_aliases": {"fast": "gpt-x"},
        }
    },
    "agents": {"my-agent": {"command": ["sh"], "enabled": True}},
}


@pytest.fixture(scope="module")
def api_daemon(tmp_path_factory: pytest.TempPathFactory):
    home = migrated_home(tmp_path_factory.mktemp("api") / "home", SETTINGS)
    server = Daemon(home).start()
    yield server
    server.stop()


@pytest.fixture
def client(api_daemon: Daemon):
    with httpx.Client(
        base_url=f"{api_daemon.url}/api", headers=api_daemon.owner_headers(), timeout=10
    ) as c:
        yield c


def test_profiles_are_mirrored_with_the_key_redacted(client: httpx.Client) -> None:
    profiles = client.get("/profiles").json()
    assert [p["id"] for p in profiles] == ["work"]
    assert profiles[0]["api_key"] == "[redacted]"
    assert profiles[0]["model_aliases"] == {"fast": "gpt-x"}
    assert SECRET not in client.get("/profiles/work").text
    missing = client.get("/profiles/nope")
    assert missing.status_code == 404
    assert missing.json()["error"] == {
        "status": 404,
        "code": "not_found",
        "message": "no profile 'nope'",
    }


def test_agents_merge_builtins_with_settings(client: httpx.Client) -> None:
    agents = {a["name"]: a for a in client.get("/agents").json()}
    assert {"shell", "claude", "codex", "gemini", "opencode", "qwen", "my-agent"} <= set(agents)
    assert agents["shell"]["enabled"] is True
    assert agents["my-agent"] == {
        **agents["my-agent"],
        "enabled": True,
        "source": "settings",
        "command": ["sh"],
    }


def test_workspaces_create_is_idempotent_and_delete_removes(client: httpx.Client, tmp_path):
    first = client.post("/workspaces", json={"path": str(tmp_path), "name": "demo"})
    again = client.post("/workspaces", json={"path": str(tmp_path)})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    settings = client.get("/settings").json()
    assert str(tmp_path.resolve()) in settings["workspaces"]
    assert client.delete(f"/workspaces/{first.json()['id']}").status_code == 204
    assert str(tmp_path.resolve()) not in client.get("/settings").json()["workspaces"]
    assert client.delete(f"/workspaces/{first.json()['id']}").status_code == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"path": "relative/dir"}, "must be absolute"),
        ({"path": "/definitely/not/here"}, "not an existing directory"),
        ({}, "path"),
    ],
)
def test_bad_workspaces_get_a_clear_400(client: httpx.Client, body: dict, message: str) -> None:
    response = client.post("/workspaces", json=body)
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]


def test_malformed_json_gets_a_json_400(client: httpx.Client) -> None:
    response = client.post(
        "/workspaces", content=b"{nope", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"


def test_settings_are_shown_redacted_and_a_write_keeps_keys_and_unknown_keys(
    client: httpx.Client, api_daemon: Daemon
) -> None:
    shown = client.get("/settings").json()
    assert shown["profiles"]["work"]["api_key"] == "[redacted]"
    shown["agents"]["other"] = {"command": ["bash"]}
    assert client.put("/settings", json=shown).status_code == 200
    on_disk = json.loads((api_daemon.home / "settings.json").read_text())
    assert on_disk["profiles"]["work"]["api_key"] == SECRET
    assert on_disk["future_feature"] == {"keep": True}
    assert "other" in {a["name"] for a in client.get("/agents").json()}


def test_an_invalid_settings_write_is_refused_naming_the_key(client: httpx.Client) -> None:
    response = client.patch("/settings", json={"profiles": {"p": {"provider": "nope"}}})
    assert response.status_code == 400
    assert "profiles.p.provider" in response.json()["error"]["message"]


def test_an_edit_of_settings_json_on_disk_is_picked_up(
    client: httpx.Client, api_daemon: Daemon
) -> None:
    path = api_daemon.home / "settings.json"
    data = json.loads(path.read_text())
    data["profiles"]["second"] = {"provider": "gemini", "base_url": "https://g.example"}
    path.write_text(json.dumps(data))
    os.utime(path)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if "second" in {p["id"] for p in client.get("/profiles").json()}:
            return
        time.sleep(0.2)
    raise AssertionError("the daemon did not pick up the edited settings.json within 5 s")


def test_the_openapi_schema_documents_the_internal_api(client: httpx.Client) -> None:
    response = client.get("/schema/", params={"format": "json"})
    assert response.status_code == 200
    assert "json" in response.headers["content-type"]
    schema = response.json()
    assert {"/api/workspaces", "/api/settings", "/api/sessions"} <= set(schema["paths"])
    assert "Internal" in schema["info"]["description"]


ADMIN_PAGES = [
    "sessions_app/session",
    "sessions_app/workspace",
    "sessions_app/handovercode",
    "sessions_app/agent",
    "sessions_app/sessionevent",
    "subagents_app/subagentturn",  # moved from sessions_app (issue 32)
    "subagents_app/subagent",
    "channels_app/channel",
    "remote_app/tunnel",
    "remote_app/pairingrequest",
    "remote_app/paireddevice",
    "remote_app/pairinginvite",
    "remote_app/wrongpairingcode",
    "channels_app/channelchat",
    "channels_app/handledevent",
    "notifications_app/notification",
    "notifications_app/delivery",
    "notifications_app/pushsubscription",
    "bridge_app/profile",
    "bridge_app/conversation",
    "bridge_app/bridgerequest",
    "previews_app/preview",
]


def test_every_model_has_a_working_admin_page_and_no_key_is_shown(api_daemon: Daemon) -> None:
    with httpx.Client(base_url=api_daemon.url, headers=api_daemon.owner_headers()) as admin:
        for page in ADMIN_PAGES:
            response = admin.get(f"/admin/{page}/", params={"q": "x"})
            assert response.status_code == 200, page
        detail = admin.get("/admin/bridge_app/profile/work/change/")
        assert detail.status_code == 200
        assert SECRET not in detail.text
        assert "settings.json" in detail.text


def test_unknown_routes_under_api_answer_json_404(client: httpx.Client) -> None:
    response = client.get("/sessions/not-a-uuid")
    assert response.status_code == 404
    assert response.json()["error"]["status"] == 404
