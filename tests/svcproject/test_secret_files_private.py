"""Issue 41, item 3: every file svc writes a token or secret into is the owner's alone, by its own
mode — not only because $SVC_HOME is 0700 (a person may open that folder up, a backup tool may
copy it elsewhere). Another unix user (harness/other_user.py) tries to read each one."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from channels_app import secret_store
from core import config
from harness.other_user import readable_by_other
from remote_app import tunnel_setup


@pytest.fixture
def open_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """$SVC_HOME in a folder every user can enter."""
    base = Path(tempfile.mkdtemp(prefix="svc-open-home-", dir="/var/tmp"))
    base.chmod(0o755)
    monkeypatch.setenv("SVC_HOME", str(base / "svc"))
    yield base / "svc"
    shutil.rmtree(base, ignore_errors=True)


def opened_up(home: Path) -> None:
    """What a person might do to the folders (chmod -R go+rX), leaving the files' own modes."""
    for folder in (home, *(p for p in home.rglob("*") if p.is_dir())):
        folder.chmod(0o755)


def test_no_file_svc_writes_a_secret_into_can_be_read_by_another_user(open_home: Path) -> None:
    config.load_auth()  # auth.json: the owner and MCP tokens
    profile = {"provider": "anthropic", "base_url": "https://a.example", "api_key": "sk-1"}
    config.write_settings({"profiles": {"p": profile}})
    config.write_settings({"profiles": {"p": profile}, "workspaces": []})  # and the .bak
    secret_store.store({secret_store.key_for("telegram", "bot_token"): "123:abc"})
    # A tunnel's pasted authtoken, over a file someone left 0644.
    (open_home / "secrets").mkdir(mode=0o700)
    (open_home / "secrets" / "tunnel-t.token").write_text("old\n")
    (open_home / "secrets" / "tunnel-t.token").chmod(0o644)
    token_file = Path(tunnel_setup._token_file("t", "ngrok-token"))
    written = {
        "auth.json": open_home / "auth.json",
        "settings.json": open_home / "settings.json",
        "settings.json.bak": open_home / "settings.json.bak",
        "secrets.json": open_home / "secrets.json",
        "tunnel token": token_file,
    }
    assert "sk-1" in written["settings.json.bak"].read_text()
    assert json.loads(written["secrets.json"].read_text())
    opened_up(open_home)
    (open_home / "secrets" / "canary").write_text("a file of the default mode\n")
    assert readable_by_other(open_home / "secrets" / "canary")  # the attacker gets that far
    readable = [name for name, path in written.items() if readable_by_other(path)]
    assert readable == [], f"another user can read {readable}"
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in written.values())
