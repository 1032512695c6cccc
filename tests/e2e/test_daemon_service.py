"""The daemon as a daemon (issue 34, frictions 6 and 7; docs/service.md): `bin/svc --help` lists
svc's own commands, `bin/svc url` prints a login URL that works, a port already in use ends
start-up with a non-zero exit and one line naming the port (and another svc when it is one), and
`bin/svc run` says what it does and prints its login URL (never under a service manager). The
unit `bin/svc service install` writes: test_service_unit.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from harness.browser_login import localhost_client
from harness.daemon import ROOT, Daemon, free_port, migrated_home
from harness.holders import end_holder
from tests.e2e.svc_command import START_LIMIT_S, SVC, svc, svc_env, svc_url_when_up


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = Daemon(migrated_home(tmp_path_factory.mktemp("svc-service") / "home")).start()
    yield server
    server.stop()


# --- help --------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["--help"], [], ["help"], ["-h"]], ids=repr)
def test_help_lists_svcs_own_commands_only(args: list[str], tmp_path: Path) -> None:
    result = svc(*args, env=svc_env(tmp_path / "home"), timeout=30)
    assert result.returncode == 0, result.stderr
    listed = {line.split()[0] for line in result.stdout.splitlines() if line.startswith("  ")}
    own = {"run", "url", "service", "status", "sessions", "attach", "pickup", "resume"}
    assert own | {"agents", "previews", "tunnels", "pair", "rotate_tokens"} <= listed
    for django_only in ("flush", "dbshell", "createsuperuser", "runserver", "sqlmigrate"):
        assert django_only not in result.stdout
    assert "usage: bin/svc COMMAND" in result.stdout
    # Each with its one-line description, the one its --help shows.
    status_line = next(line for line in result.stdout.splitlines() if line.startswith("  status"))
    assert "Show whether the svc daemon is running" in status_line


def test_django_commands_stay_behind_manage_py_and_help_names_a_commands_options(
    tmp_path: Path,
) -> None:
    python = ROOT / ".venv" / "bin" / "python"
    django = subprocess.run(
        [str(python), str(ROOT / "manage.py"), "help"],
        env=svc_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert django.returncode == 0 and "flush" in django.stdout and "dbshell" in django.stdout
    options = svc("help", "service", env=svc_env(tmp_path / "home"))
    assert options.returncode == 0, options.stderr
    assert "{install,uninstall,status}" in options.stdout


# --- the login URL -----------------------------------------------------------------------------


def test_svc_url_prints_a_url_that_logs_a_real_client_in(running: Daemon) -> None:
    result = svc("url", env=svc_env(running.home))
    assert result.returncode == 0, result.stderr
    url = result.stdout.strip()
    assert url.startswith(f"{running.url}/login?token=") and "\n" not in url
    assert result.stderr == ""  # it is running: nothing to warn about
    with localhost_client(follow_redirects=True, timeout=30) as client:
        page = client.get(url)
        assert page.status_code == 200, page.text
        assert page.url.host == running.auth()["browser_host"]
        assert 'name="csrf-token"' in page.text  # the dashboard itself, not the login help
        assert client.get(f"http://{page.url.host}:{running.port}/api/sessions").status_code == 200
    # The README's shell line takes the token and base URL from it, whatever SVC_HOME and port.
    readme = subprocess.run(
        ["sh", "-c", f'URL=$("{SVC}" url); echo "${{URL#*token=}} ${{URL%%/login*}}"'],
        env=svc_env(running.home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert readme.stdout.split() == [running.owner_token, running.url], readme.stderr
    # The token is never written to svc's logs by this (docs/security.md).
    logs = "".join(p.read_text(errors="replace") for p in (running.home / "logs").glob("*.log"))
    assert running.owner_token not in logs


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_the_url_svc_url_prints_opens_the_dashboard_in_chromium(
    running: Daemon, browser: Any, size: tuple[int, int]
) -> None:
    """Friction 6 in the browser a person uses: the lost login URL, printed again, is pasted into
    Chromium (desktop and phone) and the dashboard opens logged in. Before `bin/svc url` the
    command did not exist (Django's 'Unknown command')."""
    url = svc("url", env=svc_env(running.home)).stdout.strip()
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    try:
        page = context.new_page()
        page.goto(url)
        expect(page.locator("#sessions")).to_have_count(1)  # the dashboard, logged in
        assert page.url.startswith(f"http://{running.auth()['browser_host']}:{running.port}/")
        assert "token=" not in page.url  # the one-time link is gone from the address bar
    finally:
        context.close()


def test_svc_url_says_so_when_svc_is_not_running(tmp_path: Path) -> None:
    home = migrated_home(tmp_path / "home")
    port = free_port()
    result = svc("url", env=svc_env(home, SVC_PORT=str(port)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"http://127.0.0.1:{port}/login?token=")
    assert f"svc is not running on port {port}" in result.stderr


# --- a port in use -----------------------------------------------------------------------------


def start_on(port: int, home: Path) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    result = svc("run", "--port", str(port), env=svc_env(home), timeout=START_LIMIT_S)
    # Said before anything else (issue 43): no "Performing system checks…", no "Starting
    # ASGI/Daphne … server at …" banner promising a server that never comes.
    assert result.stdout == "", result.stdout
    return result, time.monotonic() - began


def the_one_line(result: subprocess.CompletedProcess) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_second_svc_on_a_port_another_svc_holds_exits_non_zero_naming_it(
    running: Daemon, tmp_path: Path
) -> None:
    result, _ = start_on(running.port, migrated_home(tmp_path / "other"))
    assert result.returncode != 0
    line = the_one_line(result)
    assert f"port {running.port}" in line and "in use by another svc" in line
    assert "this same SVC_HOME" not in line
    assert f"pid {running.proc.pid}" in line  # the daemon's own process
    assert httpx.get(f"{running.url}/login", timeout=10).status_code == 401  # still serving


def test_svc_started_twice_on_one_home_says_it_is_already_running(running: Daemon) -> None:
    result, _ = start_on(running.port, running.home)
    assert result.returncode != 0
    line = the_one_line(result)
    assert f"port {running.port}" in line and "another svc of this same SVC_HOME" in line
    assert "bin/svc url" in line
    assert running.owner_token not in result.stdout + result.stderr


def test_a_port_held_by_another_program_exits_non_zero_naming_the_port(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result, _ = start_on(port, migrated_home(tmp_path / "home"))
    assert result.returncode != 0
    line = the_one_line(result)
    assert f"port {port}" in line and "another program" in line and "another svc" not in line
    assert f"pid {os.getpid()}" in line  # this test holds it


# --- the service unit --------------------------------------------------------------------------


def test_svc_run_on_a_new_home_says_what_it_does_and_prints_a_login_url_that_works(
    tmp_path: Path,
) -> None:
    """Issue 43, friction 7: `bin/svc run` on a new home printed no login URL unless stderr was
    a terminal (`make run` always did). Here stderr is a pipe, as under a tool that logs it."""
    home = tmp_path / "new-home"  # nothing at all: no auth.json, no database
    port = free_port()
    proc = subprocess.Popen(
        [str(SVC), "run", "--port", str(port)],
        env=svc_env(home),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(proc.stderr or []), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + START_LIMIT_S
        while not any("/login?token=" in line for line in said):
            assert proc.poll() is None, "".join(said)
            assert time.monotonic() < deadline, "".join(said)
            time.sleep(0.2)
        first = "svc: setting up the database of a new home ("
        migrating = next(i for i, line in enumerate(said) if line.startswith(first))
        assert said[migrating].rstrip().endswith(" migrations)…"), said[migrating]
        url = next(line.strip() for line in said if "/login?token=" in line)
        assert said.index(next(x for x in said if "/login?token=" in x)) > migrating
        token = json.loads((home / "auth.json").read_text())["owner_token"]
        assert url == f"http://127.0.0.1:{port}/login?token={token}"
        with localhost_client(timeout=30) as client:
            handed = client.get(url)
            assert handed.status_code in (302, 303), handed.text
            dashboard = client.get(url, follow_redirects=True)
        host = json.loads((home / "auth.json").read_text())["browser_host"]
        assert dashboard.status_code == 200 and str(dashboard.url) == f"http://{host}:{port}/"
        assert 'name="csrf-token"' in dashboard.text  # the dashboard, logged in
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
        end_holder(home)


def test_svc_run_started_by_systemd_never_prints_the_login_url(tmp_path: Path) -> None:
    """A unit written before `SVC_PRINT_LOGIN=0` was: systemd's INVOCATION_ID is enough to keep
    the owner token out of the journal (docs/service.md)."""
    home = migrated_home(tmp_path / "home")
    port = free_port()
    proc = subprocess.Popen(
        [str(SVC), "run", "--port", str(port)],
        env=svc_env(home, INVOCATION_ID="0123456789abcdef0123456789abcdef"),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        svc_url_when_up(home, port, proc)
        time.sleep(1)  # the URL would be printed right after the bind
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert b"/login?token=" not in (proc.stderr.read() if proc.stderr else b"")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        end_holder(home)
