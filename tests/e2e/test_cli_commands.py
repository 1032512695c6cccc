"""The command-line client's list commands, and every command with the daemon stopped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.daemon import Daemon, free_port, manage, migrated_home

COMMANDS = [
    ["status"],
    ["sessions"],
    ["previews"],
    ["profiles"],
    ["agents"],
    ["turns"],
    ["attach", "00000000-0000-0000-0000-000000000000"],
    ["pickup", "ABCD"],
    ["tunnels"],
    ["pair", "123456"],
    ["channels"],
]


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    settings = {
        "profiles": {
            "work": {
                "provider": "anthropic",
                "base_url": "https://api.anthropic.com",
                "api_key": "sk-SECRET",
                "models": ["m1"],
            }
        }
    }
    server = Daemon(migrated_home(tmp_path_factory.mktemp("cli") / "home", settings)).start()
    yield server
    server.stop()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_command_says_in_one_line_how_to_start_a_stopped_daemon(
    tmp_path: Path, command: list[str]
) -> None:
    home = migrated_home(tmp_path / "home")
    env = {"SVC_PORT": str(free_port()), "PYTHONPROFILEIMPORTTIME": "1"}
    result = manage(home, *command, env=env, check=False)
    assert result.returncode != 0
    imports = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    lines = [line for line in result.stderr.splitlines() if line.strip() and line not in imports]
    assert len(lines) == 1, result.stderr
    assert "svc is not running at" in lines[0] and "make run" in lines[0]
    # A client skips Django's system checks, which would import every view through the URLconf.
    assert imports and not [line for line in imports if line.endswith(" svcproject.views")]


def test_profiles_never_show_a_key(svc: Daemon) -> None:
    listed = json.loads(svc.manage("profiles", "--json").stdout)
    assert [p["id"] for p in listed] == ["work"]
    text = svc.manage("profiles").stdout
    assert "work" in text and "anthropic" in text
    assert "SECRET" not in text and "SECRET" not in json.dumps(listed)


def test_agents_lists_the_shell_as_enabled(svc: Daemon) -> None:
    agents = {a["name"]: a for a in json.loads(svc.manage("agents", "--json").stdout)}
    assert agents["shell"]["enabled"] is True
    assert "shell" in svc.manage("agents").stdout


def test_previews_lists_links(svc: Daemon, tmp_path: Path) -> None:
    made = httpx.post(
        f"{svc.url}/api/previews",
        json={"port": free_port(), "workspace": str(tmp_path)},
        headers=svc.owner_headers(),
    ).json()
    listed = json.loads(svc.manage("previews", "--json").stdout)
    assert made["slug"] in {p["slug"] for p in listed}
    table = svc.manage("previews").stdout
    assert made["slug"] in table and "/preview/s/" in table


def test_a_reader_that_leaves_early_costs_no_traceback(svc: Daemon) -> None:
    """`manage.py status | head`: the pipe's reader goes away before the command has written."""
    import os
    import subprocess

    from harness.daemon import PYTHON, ROOT

    env = {**os.environ, "SVC_HOME": str(svc.home)}
    piped = subprocess.run(
        ["sh", "-c", f"'{PYTHON}' manage.py status | true"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr, piped.stderr
    whole = subprocess.run(
        ["sh", "-c", f"'{PYTHON}' manage.py status | head -1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert whole.stdout.startswith("svc is running at ") and whole.stderr == ""
