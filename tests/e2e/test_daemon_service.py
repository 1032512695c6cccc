"""The daemon as a daemon (issue 34, frictions 6 and 7; docs/service.md): `bin/svc --help` lists
svc's own commands, `bin/svc url` prints a login URL that works, a port already in use ends
start-up with a non-zero exit and one line naming the port (and another svc when it is one), and
`bin/svc service install|status|uninstall` writes a systemd user unit that runs svc."""

from __future__ import annotations

import json
import os
import plistlib
import shlex
import shutil
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

from cli import service
from harness.browser_login import localhost_client
from harness.daemon import ROOT, Daemon, free_port, migrated_home
from harness.holders import end_holder

SVC = ROOT / "bin" / "svc"
START_LIMIT_S = 90  # a cold interpreter, Django's checks and a migrate, on a busy machine


def svc_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
    return {**env, "SVC_HOME": str(home), **extra}


def svc(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SVC), *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


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


def unit_values(text: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(f"{key}=")]


def systemd_words(value: str) -> list[str]:
    """A quoted unit-file value as systemd reads it (only the escapes svc writes)."""
    return [w.replace("%%", "%").replace("$$", "$") for w in shlex.split(value)]


def verify(unit: Path, tmp: Path) -> str:
    """`systemd-analyze --user verify`, in a user manager of its own (a runtime folder of its
    own: none is running here); '' when it accepts the unit without a warning."""
    runtime = tmp / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "XDG_RUNTIME_DIR": str(runtime)}
    result = subprocess.run(
        ["systemd-analyze", "--user", "verify", str(unit)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return (
        f"exit {result.returncode}: {result.stdout}{result.stderr}".strip()
        if (result.returncode or result.stdout.strip() or result.stderr.strip())
        else ""
    )


def test_service_install_status_uninstall_writes_a_unit_that_runs_svc(tmp_path: Path) -> None:
    home = migrated_home(tmp_path / "svc home %s")  # a space, a specifier: written literally
    port = free_port()
    fake_home = tmp_path / "user"
    config = tmp_path / "xdg config"
    runtime = tmp_path / "no-user-manager"
    runtime.mkdir(mode=0o700)
    env = svc_env(home, HOME=str(fake_home), XDG_CONFIG_HOME=str(config))
    env["XDG_RUNTIME_DIR"] = str(runtime)  # no user systemd answers there: nothing is enabled
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    unit = config / "systemd" / "user" / "svc.service"

    before = svc("service", "status", env=env)
    assert before.returncode == 3 and "not installed" in before.stdout

    installed = svc("service", "install", "--port", str(port), env=env)
    # Written, but nothing enabled (no user manager answers here): not a success (issue 43).
    assert installed.returncode == 1, installed.stderr
    assert installed.stderr.startswith(
        "svc service: the unit is written but nothing was enabled: no systemd user manager is "
        "reachable from here"
    ), installed.stderr
    assert f"wrote {unit}" in installed.stdout
    assert "systemctl --user daemon-reload && systemctl --user enable --now svc" in installed.stdout
    text = unit.read_text()
    assert unit_values(text, "KillMode") == ["process"]  # the holders outlive a restart
    assert unit_values(text, "Restart") == ["on-failure"]
    assert unit_values(text, "WantedBy") == ["default.target"]
    if shutil.which("systemd-analyze"):
        assert verify(unit, tmp_path) == ""
    else:  # explained in docs/service.md: the text is checked as systemd would split it
        assert {"[Unit]", "[Service]", "[Install]"} <= set(text.splitlines())

    status = svc("service", "status", env=env)
    assert status.returncode == 0 and f"installed at {unit}" in status.stdout
    assert "differs" not in status.stdout

    # What the unit runs is svc itself, on that port with that home, make-free.
    argv = systemd_words(unit_values(text, "ExecStart")[0])
    assigned = dict(w.split("=", 1) for w in systemd_words(unit_values(text, "Environment")[0]))
    assert assigned["SVC_HOME"] == str(home) and argv[0] == str(ROOT / ".venv" / "bin" / "python")
    daemon_env = {**{k: v for k, v in os.environ.items() if k != "SVC_PRINT_LOGIN"}, **assigned}
    proc = subprocess.Popen(
        argv,
        cwd=unit_values(text, "WorkingDirectory")[0],
        env=daemon_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        login = svc_url_when_up(home, port, proc)
        with localhost_client(follow_redirects=True, timeout=30) as client:
            assert client.get(login).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0  # a clean stop: Restart=on-failure leaves it stopped
        assert b"/login?token=" not in proc.stderr.read()  # no login URL in the journal
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        end_holder(home)

    removed = svc("service", "uninstall", env=env)
    assert removed.returncode == 0 and f"removed {unit}" in removed.stdout
    assert not unit.exists()
    assert svc("service", "status", env=env).returncode == 3


SYSTEMCTL = """#!/bin/sh
# A stand-in for systemctl: a user manager that answers, and `enable` as told by $ENABLE.
echo "$@" >> "$CALLS"
case "$*" in
    *enable*) [ "$ENABLE" = ok ] || { echo "Failed to enable unit: Access denied" >&2; exit 1; } ;;
esac
exit 0
"""


@pytest.mark.parametrize("enable", ["ok", "refused"])
def test_service_install_exits_non_zero_unless_it_enabled_something(
    tmp_path: Path, enable: str
) -> None:
    """`install` exited 0 whatever happened after the unit was written (issue 43): now 0 only
    when the service manager enabled it, else 1 with the reason on stderr."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "systemctl").write_text(SYSTEMCTL)
    (tools / "systemctl").chmod(0o755)
    calls = tmp_path / "calls"
    env = svc_env(
        migrated_home(tmp_path / "home"),
        HOME=str(tmp_path / "user"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        PATH=os.pathsep.join([str(tools), os.environ["PATH"]]),
        CALLS=str(calls),
        ENABLE=enable,
    )
    installed = svc("service", "install", "--port", str(free_port()), env=env)
    assert "--user enable --now svc.service" in calls.read_text()
    if enable == "ok":
        assert installed.returncode == 0 and installed.stderr == "", installed.stderr
        assert "Enabled and started: it starts at every login" in installed.stdout
    else:
        assert installed.returncode == 1, installed.stdout
        assert installed.stderr.strip() == (
            "svc service: the unit is written but nothing was enabled: systemctl --user enable "
            "--now svc.service failed: Failed to enable unit: Access denied"
        )
    unit = tmp_path / "config" / "systemd" / "user" / "svc.service"
    assert 'SVC_PRINT_LOGIN=0"' in unit.read_text()  # `run` prints no login URL to the journal


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


def svc_url_when_up(home: Path, port: int, proc: subprocess.Popen) -> str:
    deadline = time.monotonic() + START_LIMIT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            httpx.get(f"http://127.0.0.1:{port}/login", timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.2)
    result = svc("url", env=svc_env(home))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout.strip()


def test_the_launchd_agent_starts_at_login_restarts_on_failure_and_spares_the_holders() -> None:
    spec = service.Spec(
        root=ROOT,
        python=ROOT / ".venv" / "bin" / "python",
        home=Path("/Users/me/svc & <home>"),
        host="127.0.0.1",
        port=8123,
        path_env="/opt/homebrew/bin:/usr/bin:/bin",
    )
    agent = plistlib.loads(service.launchd_plist(spec).encode())
    assert agent["Label"] == service.LAUNCHD_LABEL
    assert agent["ProgramArguments"] == [*spec.argv] and agent["ProgramArguments"][-1] == "8123"
    assert agent["ProgramArguments"][2:4] == ["run", "--host"]
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["AbandonProcessGroup"] is True
    assert agent["EnvironmentVariables"]["SVC_HOME"] == "/Users/me/svc & <home>"
    where = service.unit_path("launchd", {"HOME": "/Users/me"})
    assert where == Path("/Users/me/Library/LaunchAgents/local.svc.plist")
    assert service.unit_path("systemd", {"HOME": "/h", "XDG_CONFIG_HOME": "/c"}) == Path(
        "/c/systemd/user/svc.service"
    )


INJECTED = "ExecStartPre=/bin/touch /tmp/svc-unit-injected"


@pytest.mark.parametrize("variable", ["SVC_HOME", "PATH"])
def test_a_newline_in_svc_home_or_path_cannot_add_a_directive_to_the_unit(
    tmp_path: Path, variable: str
) -> None:
    """Issue 41 (low): `Environment="SVC_HOME=…"` took the value as it was, so a newline in it
    ended the line and what followed became a directive of the unit (here a command run at every
    start). Such a value is refused with a message naming it; no unit is written."""
    config = tmp_path / "xdg config"
    runtime = tmp_path / "no-user-manager"
    runtime.mkdir(mode=0o700)
    hostile = f"\n[Service]\n{INJECTED}\n"
    home = tmp_path / f"svc home{hostile}" if variable == "SVC_HOME" else tmp_path / "home"
    env = svc_env(home, HOME=str(tmp_path / "user"), XDG_CONFIG_HOME=str(config))
    env["XDG_RUNTIME_DIR"] = str(runtime)
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    if variable == "PATH":
        env["PATH"] = os.environ["PATH"] + hostile
    unit = config / "systemd" / "user" / "svc.service"

    installed = svc("service", "install", "--port", str(free_port()), env=env)
    written = unit.read_text() if unit.exists() else ""
    assert INJECTED not in written.splitlines(), "the unit runs the injected command"
    assert installed.returncode != 0 and not unit.exists()
    assert f"{variable} holds a control character ('\\n')" in installed.stderr
    assert "Traceback" not in installed.stderr
    assert svc("service", "uninstall", env=env).returncode == 0  # still possible


def test_the_launchd_agent_refuses_a_control_character_rather_than_failing_in_plistlib() -> None:
    spec = service.Spec(
        root=ROOT,
        python=ROOT / ".venv" / "bin" / "python",
        home=Path("/Users/me/svc\x01home"),
        host="127.0.0.1",
        port=8123,
        path_env="/usr/bin:/bin",
    )
    with pytest.raises(service.UnsafeValue, match="SVC_HOME holds a control character"):
        service.unit_text("launchd", spec)
