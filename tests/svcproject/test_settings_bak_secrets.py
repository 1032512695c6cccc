"""Issue 41 (low): settings.json.bak keeps no secret the owner took out of settings.json — through
svc's own writes (the API, the dashboard) or by hand — while the rest of it stays as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core import config, settings_store

KEY = "sk-live-REMOVED-0123456789"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SVC_HOME", str(tmp_path))
    return tmp_path


def profile(**extra: object) -> dict:
    return {"provider": "anthropic", "base_url": "https://a.example", **extra}


def hand_write(path: Path, text: str) -> None:
    """An editor's save: new bytes and a new mtime (svc's cache sees the change)."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 5_000_000, before + 5_000_000))


@pytest.mark.django_db
def test_a_key_removed_through_the_api_leaves_no_trace_in_the_bak(home: Path) -> None:
    by_hand = json.dumps({"profiles": {"p": profile(api_key=KEY)}, "mine": 1}, indent=4)
    (home / "settings.json").write_text(by_hand)
    shown = settings_store.settings_redacted()
    del shown["profiles"]["p"]["api_key"]
    settings_store.settings_replace(raw=shown)
    bak = (home / "settings.json.bak").read_text()
    assert KEY not in bak and KEY[:12] not in bak
    # Everything else is the file as it was, byte for byte (its 4-space indent included).
    assert bak == by_hand.replace(json.dumps(KEY), '"[removed]"')


def test_a_replaced_key_and_every_kind_of_secret_removed_are_gone_from_the_bak(
    home: Path,
) -> None:
    secrets = {
        "profiles": {
            "p": profile(api_key=KEY, headers={"X-Org": "org-SECRET-1"}),
            "q": profile(api_key_env="Q_KEY"),
        },
        "agents": {"claude": {"env": {"ANTHROPIC_API_KEY": "env-SECRET-2"}}},
        "channels": {"telegram": {"enabled": False, "bot_token": "123:tg-SECRET-3"}},
        "notifications": {"urls": ["tgram://bot-SECRET-4/42"]},
        "fleet": {"secret": "fleet-SECRET-5" * 3},
    }
    config.write_settings(secrets)
    config.write_settings(
        {"profiles": {"p": profile(api_key="sk-new"), "q": profile(api_key_env="Q_KEY")}}
    )
    bak = (home / "settings.json.bak").read_text()
    assert "SECRET" not in bak and KEY not in bak
    kept = json.loads(bak)
    assert kept["profiles"]["q"]["api_key_env"] == "Q_KEY"  # a variable's name is no secret
    assert kept["channels"]["telegram"]["enabled"] is False
    assert kept["profiles"]["p"]["api_key"] == "[removed]"


def test_a_secret_still_in_the_settings_stays_in_the_bak(home: Path) -> None:
    config.write_settings({"profiles": {"p": profile(api_key=KEY)}})
    config.write_settings({"profiles": {"renamed": profile(api_key=KEY)}})
    assert KEY in (home / "settings.json.bak").read_text()


def test_a_key_removed_by_hand_is_taken_out_of_the_bak_when_svc_reads_the_file(
    home: Path,
) -> None:
    path = home / "settings.json"
    config.write_settings({"profiles": {"p": profile(api_key=KEY)}})
    config.write_settings({"profiles": {"p": profile(api_key=KEY)}, "workspaces": []})
    assert KEY in (home / "settings.json.bak").read_text()  # the file before svc's last write
    hand_write(path, json.dumps({"profiles": {"p": profile()}, "workspaces": []}))
    assert "api_key" not in config.current_settings().raw["profiles"]["p"]
    assert KEY not in (home / "settings.json.bak").read_text()
    assert (home / "settings.json.bak").stat().st_mode & 0o777 == 0o600
