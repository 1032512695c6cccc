"""`bin/svc service install|status|uninstall` (docs/service.md): the systemd user unit and the
launchd agent it writes run svc, keep the holders across a restart, say when nothing was
enabled, and cannot be given a directive through a newline in SVC_HOME or PATH."""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from cli import service
from harness.browser_login import localhost_client
from harness.daemon import ROOT, free_port, migrated_home
from harness.holders import end_holder
from tests.e2e.svc_command import svc, svc_env, svc_url_when_up


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
