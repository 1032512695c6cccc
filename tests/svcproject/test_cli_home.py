"""The fast client (cli) uses auth.json exactly when the Django side would keep it as
it is, and answers only the command lines it knows; the rest goes to manage.py."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli import home as cli_home
from cli import views
from core import config

GOOD: dict[str, Any] = {
    "port": 8123,
    "owner_token": "a" * 64,
    "mcp_token": "b" * 64,
    "browser_host": "svc-abcdefghijk2.localhost",
    "remote_port": 0,
}
VARIANTS: list[tuple[str, dict[str, Any] | None, int]] = [
    ("as written", GOOD, 0o600),
    ("open to the group", GOOD, 0o640),
    ("no file", None, 0o600),
    ("port a string", {**GOOD, "port": "8123"}, 0o600),
    ("port true", {**GOOD, "port": True}, 0o600),
    ("port 0", {**GOOD, "port": 0}, 0o600),
    ("short token", {**GOOD, "owner_token": "a" * 63}, 0o600),
    ("no mcp token", {k: v for k, v in GOOD.items() if k != "mcp_token"}, 0o600),
    ("foreign host", {**GOOD, "browser_host": "evil.localhost"}, 0o600),
    ("remote port bad (kept: not rewritten)", {**GOOD, "remote_port": -1}, 0o600),
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    place = tmp_path / "home"
    monkeypatch.setenv("SVC_HOME", str(place))
    config.svc_home()  # made private, with logs/, as the Django side does
    yield place


@pytest.mark.parametrize(("name", "data", "mode"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_the_file_is_used_as_is_exactly_when_load_auth_writes_nothing(
    home: Path, name: str, data: dict[str, Any] | None, mode: int
) -> None:
    path = home / "auth.json"
    if data is not None:
        path.write_text(json.dumps(data))
        path.chmod(mode)
    before = path.read_bytes() if path.exists() else None
    fast = cli_home.daemon_as_is()
    auth = config.load_auth()
    rewritten = path.read_bytes() != before or (path.stat().st_mode & 0o777) != mode
    assert (fast is None) == rewritten, name
    if fast is not None:
        assert (fast.port, fast.owner_token) == (auth.port, auth.owner_token)
        assert fast.url == f"http://127.0.0.1:{auth.port}"


def test_a_home_open_to_others_goes_to_the_django_side(home: Path) -> None:
    (home / "auth.json").write_text(json.dumps(GOOD))
    (home / "auth.json").chmod(0o600)
    assert cli_home.daemon_as_is() is not None
    os.chmod(home / "logs", 0o755)
    assert cli_home.daemon_as_is() is None


def test_live_statuses_are_the_models() -> None:
    from sessions_app.models import Session

    assert tuple(str(s) for s in Session.LIVE) == views.LIVE_STATUSES


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["status"], ("status", {"json": False})),
        (["status", "--json"], ("status", {"json": True})),
        (["sessions", "--live", "--json"], ("sessions", {"json": True, "live": True})),
        (["turns"], ("turns", {"json": False})),
        (["status", "--live"], None),
        (["sessions", "--li"], None),
        (["sessions", "-h"], None),
        (["turns", "--cancel", "abcd"], None),
        (["tunnels", "start", "x"], None),
        (["attach", "abcd"], None),
        (["status", "--no-color"], None),
        ([], None),
    ],
)
def test_only_the_command_lines_it_knows_are_answered_here(
    argv: list[str], parsed: tuple[str, dict[str, bool]] | None
) -> None:
    from cli.__main__ import parse

    assert parse(argv) == parsed
