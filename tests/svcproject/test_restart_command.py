"""The down banner's command (core/restart_command.py): `bin/svc run` of this clone on the port and
address svc runs on, with its $SVC_HOME when that is not the default — quoted for a shell, so it
can be pasted as it is (the browser test runs it: tests/e2e/test_first_hour_dashboard.py)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from core import restart_command, server_compat
from harness.daemon import ROOT

SVC = str(ROOT / "bin" / "svc")


@pytest.fixture
def bound(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    where: dict[str, object] = {"host": "127.0.0.1", "port": 8765}
    monkeypatch.setattr(restart_command.config, "svc_port", lambda: where["port"])
    monkeypatch.setattr(server_compat, "listening_host", lambda port: where["host"])
    return where


def test_a_home_of_its_own_is_named_and_quoted(
    bound: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "my svc's home"
    monkeypatch.setenv("SVC_HOME", str(home))
    command = restart_command.restart_command()
    assert command == f"SVC_HOME={shlex.quote(str(home))} {SVC} run --port 8765"
    assert shlex.split(command)[0] == f"SVC_HOME={home}"  # a shell reads it back as it was
    assert restart_command.login_command() == f"SVC_HOME={shlex.quote(str(home))} {SVC} url"


def test_the_default_home_and_loopback_are_left_out(
    bound: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SVC_HOME", str(Path.home() / ".svc"))
    assert restart_command.restart_command() == f"{SVC} run --port 8765"
    monkeypatch.delenv("SVC_HOME")
    assert restart_command.restart_command() == f"{SVC} run --port 8765"


@pytest.mark.parametrize("host", ["::1", "0.0.0.0"])
def test_another_address_is_given(bound: dict, monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.delenv("SVC_HOME")
    bound["host"] = host
    assert restart_command.restart_command() == f"{SVC} run --host {host} --port 8765"


def test_the_held_secret_variables_are_named_never_their_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(restart_command.secret_env, "_held", {"DATABASE_URL": "postgres://pw"})
    monkeypatch.delenv("SVC_REDIS_URL", raising=False)
    monkeypatch.delenv("SVC_FLEET_SECRET", raising=False)
    assert restart_command.held_variables() == ["DATABASE_URL"]
    assert "pw" not in str(restart_command.page_context())
