"""Credentials in settings.json never leave svc through its API (issue 41, finding 7; contract §1):
a paired device (the remote listener, docs/remote.md) reading GET /api/settings sees no value of
an agent's `env` — where API keys for the agent go — nor the fleet secret, a profile's key or an
Apprise URL's credentials; the main port shows the same redacted settings, and a write there
that sends the placeholder back (the settings file whole, or one agent's entry) keeps the
stored value."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import httpx
import pytest

from harness.daemon import ROOT, Daemon, migrated_home
from tests.e2e.test_remote_tunnel import Remote

FAKE_ACP = str(ROOT / "harness" / "fakes" / "acp_agent.py")
SECRETS = ("sk-AGENT-SECRET-1", "ghp-AGENT-SECRET-2", "sk-PROFILE-SECRET", "FLEET-SECRET")
SETTINGS = {
    "agents": {
        "helper": {
            "acp_command": [sys.executable, FAKE_ACP],
            "env": {"OPENAI_API_KEY": SECRETS[0], "GITHUB_TOKEN": SECRETS[1], "MODE": "fast"},
        }
    },
    "profiles": {
        "p1": {
            "provider": "openai-chat",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": SECRETS[2],
        },
    },
    "fleet": {"enabled": False, "secret": SECRETS[3] + "-" + "x" * 32},
    "notifications": {"urls": ["tgram://123:TG-SECRET/456"], "events": []},
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("settings-secrets")
    server = Daemon(migrated_home(tmp / "home", SETTINGS)).start()
    yield server
    server.stop()


def stored(daemon: Daemon) -> dict:
    return json.loads((daemon.home / "settings.json").read_text())


def test_a_paired_device_reads_no_agent_env_value(daemon: Daemon) -> None:
    remote = Remote(daemon, daemon.auth()["remote_port"])
    with remote.client() as client:
        paired = remote.pair(client)
        shown = client.get("/api/settings", headers={"X-Svc-Page-Key": paired["page_key"]})
    assert shown.status_code == 200, shown.text
    text = shown.text
    for secret in (*SECRETS, "TG-SECRET", "fast"):
        assert secret not in text, f"{secret} shown to a paired device"
    env = shown.json()["agents"]["helper"]["env"]
    assert env == {name: "[redacted]" for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "MODE")}


def test_the_main_port_shows_them_redacted_and_a_write_back_keeps_them(daemon: Daemon) -> None:
    headers = daemon.owner_headers()
    shown = httpx.get(f"{daemon.url}/api/settings", headers=headers).json()
    assert not any(secret in json.dumps(shown) for secret in SECRETS)
    written = httpx.put(f"{daemon.url}/api/settings", json=shown, headers=headers)
    assert written.status_code == 200, written.text
    assert stored(daemon)["agents"]["helper"]["env"] == SETTINGS["agents"]["helper"]["env"]
    assert stored(daemon)["fleet"]["secret"] == SETTINGS["fleet"]["secret"]
    # The dashboard's agent form: the entry as shown, one value changed, one added.
    env = {**shown["agents"]["helper"]["env"], "MODE": "slow", "NEW": "1"}
    entry = {"acp_command": [sys.executable, FAKE_ACP], "env": env}
    saved = httpx.put(f"{daemon.url}/api/agents/helper", json=entry, headers=headers)
    assert saved.status_code == 200, saved.text
    assert saved.json()["check"]["ok"], saved.json()
    assert stored(daemon)["agents"]["helper"]["env"] == {
        "OPENAI_API_KEY": SECRETS[0],
        "GITHUB_TOKEN": SECRETS[1],
        "MODE": "slow",
        "NEW": "1",
    }
