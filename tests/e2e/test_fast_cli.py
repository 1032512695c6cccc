"""`bin/svc status` and the other read-only list commands answer without loading Django
(cli), and print exactly what `manage.py <command>` prints against the same daemon.

How "without Django" is seen: the commands run from a copy of the clone whose `.venv/bin/python`
is the real interpreter started with `-X importtime` (and PYTHONPROFILEIMPORTTIME, for a
manage.py it may exec), so every module the process imports is listed on its stderr. Those
lines are split off before the output is compared.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from harness.daemon import PYTHON, ROOT, Daemon, free_port, migrated_home
from harness.daemon import manage as manage_py
from harness.mcp import tool
from harness.pty import run_in_pty
from harness.termclient import create_session, start_hosting_daemon

FAST = [
    ["status"],
    ["status", "--json"],
    ["sessions"],
    ["sessions", "--live"],
    ["sessions", "--json", "--live"],
    ["previews"],
    ["previews", "--json"],
    ["profiles"],
    ["profiles", "--json"],
    ["agents"],
    ["agents", "--json"],
    ["turns"],
    ["turns", "--json"],
    ["channels"],
    ["channels", "--json"],
    ["tunnels"],
    ["tunnels", "--json"],
]
IMPORT_LINE = re.compile(r"^import time:")
DJANGO = re.compile(r"\|\s+(django|rest_framework|channels|daphne|httpx)(\.|\s*$)")


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str  # the command's own, without the import lines
    imports: list[str]  # the top-level module of each import line


def split_imports(text: str) -> tuple[str, list[str]]:
    own, imports = [], []
    for line in text.splitlines(keepends=True):
        if IMPORT_LINE.match(line):
            imports.append(line.rsplit("|", 1)[-1].strip())
        else:
            own.append(line)
    return "".join(own), imports


def django_imports(imports: list[str]) -> list[str]:
    return [m for m in imports if DJANGO.search(f"| {m}")]


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The clone as bin/svc sees it, with an interpreter that reports every import."""
    root = tmp_path_factory.mktemp("traced-clone")
    (root / "bin").mkdir()
    shutil.copy2(ROOT / "bin" / "svc", root / "bin" / "svc")
    (root / "manage.py").symlink_to(ROOT / "manage.py")
    (root / "cli").symlink_to(ROOT / "cli")
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    real = ROOT / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPROFILEIMPORTTIME=1 exec "{real}" -X importtime "$@"\n')
    python.chmod(0o755)
    return root


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon with something in every list that can have it: a running shell session, a
    preview, a profile, the fake agent and a (cancelled, so settled) subagent turn."""
    tmp = tmp_path_factory.mktemp("svc-fast-cli")
    server = start_hosting_daemon(tmp)
    try:
        work = tmp / "work"
        work.mkdir()
        session = create_session(server, work)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = httpx.get(
                f"{server.url}/api/sessions/{session['id']}", headers=server.owner_headers()
            ).json()
            if got["status"] == "running":
                break
            time.sleep(0.1)
        made = httpx.post(
            f"{server.url}/api/previews",
            headers=server.owner_headers(),
            json={"port": free_port(), "workspace": str(work)},
        )
        assert made.status_code == 201, made.text
        agents = [{"name": "slow", "agent": "fake", "task": "sleep 60"}]
        turn = asyncio.run(
            tool(server, "initialize_subagents", mode="parallel", cwd=str(work), agents=agents)
        )
        cancelled = httpx.delete(
            f"{server.url}/api/subagent-turns/{turn['turn_id']}",
            headers=server.owner_headers(),
            timeout=30,
        )
        assert cancelled.status_code == 200, cancelled.text
        yield server
    finally:
        server.stop()


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
    return {**env, "SVC_HOME": str(home)}


def svc(clone: Path, home: Path, *args: str) -> Run:
    result = subprocess.run(
        [str(clone / "bin" / "svc"), *args],
        env=env_for(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    stderr, imports = split_imports(result.stderr)
    assert imports, "the traced interpreter reported no imports"
    return Run(result.returncode, result.stdout, stderr, imports)


def manage(home: Path, *args: str) -> Run:
    result = manage_py(home, *args, check=False)
    return Run(result.returncode, result.stdout, result.stderr, [])


def stopped_home(tmp: Path) -> Path:
    """A home whose auth.json names a port nothing listens on."""
    home = migrated_home(tmp / "home")
    manage(home, "status")  # the Django side writes a valid auth.json (and says it is down)
    auth = json.loads((home / "auth.json").read_text())
    (home / "auth.json").write_text(json.dumps({**auth, "port": free_port()}))
    return home


def test_status_on_a_terminal_answers_without_importing_django(clone: Path, host: Daemon) -> None:
    code, output = run_in_pty([str(clone / "bin" / "svc"), "status"], env_for(host.home))
    text, imports = split_imports(output)
    assert code == 0, output
    assert imports and django_imports(imports) == [], django_imports(imports)
    assert "cli.api" in imports  # the fast client did the work
    expected = manage(host.home, "status").stdout
    assert text == expected.replace("\n", "\r\n")
    head = rf"svc is running at {host.url}\r\nsessions: [1-9]\d* live, \d+ in total\r\n"
    assert re.match(head, text), text


@pytest.mark.parametrize("command", FAST, ids=" ".join)
def test_the_fast_path_prints_what_manage_py_prints(
    clone: Path, host: Daemon, command: list[str]
) -> None:
    fast = svc(clone, host.home, *command)
    assert django_imports(fast.imports) == []
    slow = manage(host.home, *command)
    assert (fast.code, fast.stderr) == (slow.code, slow.stderr) == (0, "")
    assert fast.stdout == slow.stdout
    assert fast.stdout.strip()


def test_the_lists_show_what_the_daemon_holds(clone: Path, host: Daemon) -> None:
    """The parity above compares lists that are not empty."""
    out = {c: svc(clone, host.home, c, "--json").stdout for c in ("sessions", "previews", "turns")}
    assert all(json.loads(text) for text in out.values()), out
    assert "p1" in svc(clone, host.home, "profiles").stdout
    assert "cancelled" in svc(clone, host.home, "turns").stdout


def test_a_stopped_daemon_is_one_line_and_exit_1_as_before(clone: Path, tmp_path: Path) -> None:
    home = stopped_home(tmp_path)
    for command in (["status"], ["sessions", "--live"], ["turns", "--json"]):
        fast, slow = svc(clone, home, *command), manage(home, *command)
        assert django_imports(fast.imports) == []
        assert (fast.code, fast.stdout, fast.stderr) == (slow.code, slow.stdout, slow.stderr)
        # The message alone, no "CommandError:" in front (issue 43), from both paths.
        assert fast.code == 1 and fast.stderr.startswith("svc is not running at ")
        assert len(fast.stderr.splitlines()) == 1


def test_a_stopped_daemon_on_a_terminal_is_the_same_red_line(clone: Path, tmp_path: Path) -> None:
    home = stopped_home(tmp_path)
    code, output = run_in_pty([str(clone / "bin" / "svc"), "status"], env_for(home))
    text, imports = split_imports(output)
    assert django_imports(imports) == []
    slow_code, slow = run_in_pty([PYTHON, str(ROOT / "manage.py"), "status"], env_for(home))
    assert (code, text) == (slow_code, slow) == (1, slow)
    assert text.startswith("\x1b[31;1msvc is not running at ")


def test_an_api_refusal_reads_as_before(clone: Path, host: Daemon, tmp_path: Path) -> None:
    """A home whose owner token the daemon does not know: 401, in manage.py's words."""
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True, mode=0o700)
    home.chmod(0o700)
    auth = {**host.auth(), "owner_token": "0" * 64}
    (home / "auth.json").write_text(json.dumps(auth))
    (home / "auth.json").chmod(0o600)
    fast, slow = svc(clone, home, "profiles"), manage(home, "profiles")
    assert django_imports(fast.imports) == []
    assert (fast.code, fast.stdout, fast.stderr) == (slow.code, slow.stdout, slow.stderr)
    assert fast.code == 1 and fast.stderr.startswith("GET /api/profiles: 401 ")


# An abbreviation argparse accepts, a missing value, help, and a list command's write action.
HANDED_ON = [["sessions", "--li"], ["turns", "--cancel"], ["status", "-h"], ["tunnels", "start"]]


@pytest.mark.parametrize("command", HANDED_ON, ids=" ".join)
def test_what_the_fast_path_does_not_know_goes_to_manage_py(
    clone: Path, host: Daemon, command: list[str]
) -> None:
    fast, slow = svc(clone, host.home, *command), manage(host.home, *command)
    assert "django" in fast.imports
    assert (fast.code, fast.stdout, fast.stderr) == (slow.code, slow.stdout, slow.stderr)


def test_a_home_to_create_goes_to_manage_py(clone: Path, tmp_path: Path) -> None:
    """No auth.json yet: the Django side writes it (with $SVC_PORT), and says svc is down."""
    home = tmp_path / "new-home"
    port = str(free_port())
    result = subprocess.run(
        [str(clone / "bin" / "svc"), "status"],
        env={**env_for(home), "SVC_PORT": port},
        capture_output=True,
        text=True,
        timeout=60,
    )
    stderr, imports = split_imports(result.stderr)
    assert "django" in imports
    assert json.loads((home / "auth.json").read_text())["port"] == int(port)
    assert result.returncode == 1 and stderr.startswith("svc is not running at ")
    assert f"127.0.0.1:{port}" in stderr


def test_a_reader_that_leaves_early_costs_no_traceback(host: Daemon) -> None:
    env = env_for(host.home)
    for reader in ("true", "head -c 1"):
        piped = subprocess.run(
            ["sh", "-c", f"'{ROOT}/bin/svc' status | {reader}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert piped.stderr == "", piped.stderr
    first = subprocess.run(
        ["sh", "-c", f"'{ROOT}/bin/svc' sessions | head -1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert first.stdout.startswith("id ") and first.stderr == ""
