"""`bin/svc service install|uninstall|status`: svc started at login and restarted on failure, by
the user's own service manager — a systemd user unit on Linux, a launchd agent on macOS
(docs/service.md).

The unit runs this clone's virtualenv Python on `manage.py run` (no `make`), with this
`$SVC_HOME` and the installing shell's PATH (the agents' CLIs, `npx`, `git` are found as from
that shell). It stops only svc's own process (`KillMode=process`; launchd's
`AbandonProcessGroup`): the holders (docs/holders.md) run in sessions of their own but in the
unit's cgroup, and systemd's default would end them — and every terminal and agent — with svc.
"""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

UNIT_NAME = "svc.service"
LAUNCHD_LABEL = "local.svc"
RESTART_SECONDS = 5
SYSTEMCTL_SECONDS = 30


@dataclass(frozen=True)
class Spec:
    """What the unit runs."""

    root: Path  # the clone
    python: Path  # its virtualenv's interpreter
    home: Path  # $SVC_HOME
    host: str
    port: int
    path_env: str  # PATH, as the installing shell had it

    @property
    def argv(self) -> list[str]:
        manage = str(self.root / "manage.py")
        return [str(self.python), manage, "run", "--host", self.host, "--port", str(self.port)]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def environment(self) -> tuple[tuple[str, str], ...]:
        # SVC_PRINT_LOGIN=0: `run` prints the login URL wherever its stderr goes, except under
        # a service manager, where that is the journal or a log file (docs/service.md).
        return (("SVC_HOME", str(self.home)), ("PATH", self.path_env), ("SVC_PRINT_LOGIN", "0"))


def platform_kind(platform: str = sys.platform) -> str:
    return "launchd" if platform == "darwin" else "systemd"


def unit_path(kind: str, env: dict[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    if kind == "launchd":
        return home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
    config = env.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config) / "systemd" / "user" / UNIT_NAME


# --- the unit's text ---------------------------------------------------------------------------


def systemd_quote(word: str, command: bool = False) -> str:
    """One word of a unit file: quoted, with systemd's specifiers (%) — and in a command line
    its variables ($) — kept literal, so a path with a space, a % or a $ means itself."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return '"' + (escaped.replace("$", "$$") if command else escaped) + '"'


def systemd_unit(spec: Spec) -> str:
    command = " ".join(systemd_quote(word, command=True) for word in spec.argv)
    environment = " ".join(systemd_quote(f"{name}={value}") for name, value in spec.environment)
    return "\n".join(
        [
            "# Written by `bin/svc service install` (docs/service.md); `bin/svc service uninstall`",
            "# removes it. Installing again rewrites it.",
            "[Unit]",
            f"Description=svc, hosting coding agents and their sessions on {spec.url}",
            f"Documentation={(spec.root / 'docs' / 'service.md').as_uri().replace('%', '%%')}",
            "",
            "[Service]",
            "Type=simple",
            f"WorkingDirectory={str(spec.root).replace('%', '%%')}",  # a path: never quoted
            f"Environment={environment}",
            f"ExecStart={command}",
            "Restart=on-failure",
            f"RestartSec={RESTART_SECONDS}",
            "# Only svc's own process is stopped: the holders and the terminals and agents they",
            "# hold outlive a restart of svc (docs/holders.md).",
            "KillMode=process",
            "TimeoutStopSec=20",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )


def launchd_plist(spec: Spec) -> str:
    logs = spec.home / "logs"
    agent = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": spec.argv,
        "WorkingDirectory": str(spec.root),
        "EnvironmentVariables": dict(spec.environment),
        "RunAtLoad": True,  # at login
        "KeepAlive": {"SuccessfulExit": False},  # again after a failure, not after a clean stop
        "ThrottleInterval": RESTART_SECONDS,
        "AbandonProcessGroup": True,  # only svc's own process is stopped (the holders live on)
        "StandardOutPath": str(logs / "service.log"),
        "StandardErrorPath": str(logs / "service.log"),
    }
    return plistlib.dumps(agent).decode()


class UnsafeValue(ValueError):
    """A value the unit cannot carry as it is."""


def check_values(spec: Spec) -> None:
    """A control character — a newline above all — would end a value's line in a unit file, and
    what follows it would be read as directives (`ExecStartPre=` runs a command at every start);
    a plist cannot hold one at all. Such a SVC_HOME, PATH, path or host is refused, not escaped:
    none is a real one."""
    values = {
        "SVC_HOME": str(spec.home),
        "PATH": spec.path_env,
        "the clone's path": str(spec.root),
        "the interpreter's path": str(spec.python),
        "--host": spec.host,
    }
    for name, value in values.items():
        bad = next((c for c in value if ord(c) < 32 or ord(c) == 127), None)
        if bad is not None:
            raise UnsafeValue(
                f"{name} holds a control character ({bad!r}), which a service unit cannot "
                f"carry: {value!r}. Install from a shell whose {name} has none."
            )


def unit_text(kind: str, spec: Spec) -> str:
    check_values(spec)
    return launchd_plist(spec) if kind == "launchd" else systemd_unit(spec)


def installed_address(kind: str, text: str) -> tuple[str, int] | None:
    """The host and port an installed unit runs svc on (what `status` compares against when it
    is given none); None when the text names none."""
    if kind == "launchd":
        try:
            argv = plistlib.loads(text.encode()).get("ProgramArguments", [])
        except (ValueError, plistlib.InvalidFileException, AttributeError):
            return None
        words = [str(word) for word in argv]
    else:
        found = re.search(r'^ExecStart=.*"--host" "([^"]*)" "--port" "(\d+)"', text, re.M)
        words = ["--host", found.group(1), "--port", found.group(2)] if found else []
    if "--host" in words[:-1] and "--port" in words[:-1]:
        port = words[words.index("--port") + 1]
        if port.isdigit():
            return words[words.index("--host") + 1], int(port)
    return None


# --- the service manager -----------------------------------------------------------------------


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=SYSTEMCTL_SECONDS)


def user_systemd_reachable() -> bool:
    """A systemd user manager answers (not the case in most containers, or over plain SSH
    without a login session)."""
    if shutil.which("systemctl") is None:
        return False
    try:
        return _run(["systemctl", "--user", "show-environment"]).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _systemctl(*args: str) -> tuple[bool, str]:
    result = _run(["systemctl", "--user", *args])
    return result.returncode == 0, (result.stdout + result.stderr).strip()


@dataclass(frozen=True)
class Installed:
    lines: list[str]  # what was done, for stdout
    not_enabled: str = ""  # why nothing starts svc at login yet; "" when it was enabled


def install(kind: str, spec: Spec, port_taken: bool) -> Installed:
    """Write the unit and, when the service manager is reachable, enable and start it. A unit
    written but not enabled is not what `install` promises: `not_enabled` says why, and the
    command exits non-zero (issue 43)."""
    path = unit_path(kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(unit_text(kind, spec), encoding="utf-8")
    lines = [f"svc service: wrote {path}", f"  it runs: {' '.join(spec.argv)}"]
    lines.append(f"  with SVC_HOME={spec.home}, on {spec.url}; restarted on failure")
    if kind == "launchd":
        return _launchd_load(path, lines)
    if not user_systemd_reachable():
        return Installed(
            [
                *lines,
                "  No systemd user manager is reachable from here, so it is not enabled yet. In a",
                "  login session with systemd, enable and start it with:",
                "    systemctl --user daemon-reload && systemctl --user enable --now svc",
                "  (and `loginctl enable-linger` to keep it running without a login session).",
            ],
            "no systemd user manager is reachable from here (a container, or SSH without a "
            "login session)",
        )
    steps = [
        ("daemon-reload",),
        ("enable", UNIT_NAME) if port_taken else ("enable", "--now", UNIT_NAME),
    ]
    for step in steps:
        ok, said = _systemctl(*step)
        if not ok:
            failed = f"systemctl --user {' '.join(step)} failed: {said}"
            return Installed([*lines, f"  {failed}"], failed)
    if port_taken:
        return Installed(
            [
                *lines,
                f"  Enabled for the next login; not started now: port {spec.port} is in use",
                "  (an svc started by hand?). Stop that one, then: systemctl --user start svc",
            ]
        )
    done = "  Enabled and started: it starts at every login. `bin/svc url` to log in."
    return Installed([*lines, done])


def _launchd_load(path: Path, lines: list[str]) -> Installed:
    if shutil.which("launchctl") is None:
        how = f"load it with `launchctl bootstrap gui/$UID {path}`"
        return Installed([*lines, f"  launchctl was not found: {how}."], "launchctl was not found")
    result = _run(["launchctl", "bootstrap", f"gui/{os.getuid()}", str(path)])
    if result.returncode != 0:
        failed = f"launchctl bootstrap failed: {(result.stdout + result.stderr).strip()}"
        return Installed([*lines, f"  {failed}"], failed)
    return Installed([*lines, "  Loaded: it starts at every login. `bin/svc url` to log in."])


def uninstall(kind: str) -> list[str]:
    path = unit_path(kind)
    lines: list[str] = []
    if kind == "systemd" and user_systemd_reachable():
        _systemctl("disable", "--now", UNIT_NAME)  # fails harmlessly when it was not enabled
        lines.append("svc service: stopped and disabled (sessions keep running in their holders)")
    elif kind == "launchd" and shutil.which("launchctl"):
        _run(["launchctl", "bootout", f"gui/{os.getuid()}/{LAUNCHD_LABEL}"])
    if not path.exists():
        return [*lines, f"svc service: not installed (no {path})"]
    path.unlink()
    if kind == "systemd" and user_systemd_reachable():
        _systemctl("daemon-reload")
    return [*lines, f"svc service: removed {path}"]


def status(kind: str, spec: Spec) -> tuple[bool, list[str]]:
    """(installed, lines)."""
    path = unit_path(kind)
    if not path.exists():
        return False, [
            f"svc service: not installed (no {path})",
            "  `bin/svc service install` starts svc at login and restarts it on failure.",
        ]
    written = path.read_text(encoding="utf-8", errors="replace")
    lines = [f"svc service: installed at {path}", f"  runs svc on {spec.url}"]
    if written != unit_text(kind, spec):
        lines.append(
            "  It differs from what `bin/svc service install` would write now (another clone,"
            " port, SVC_HOME or PATH): install again to update it."
        )
    if kind == "systemd":
        if user_systemd_reachable():
            enabled = _systemctl("is-enabled", UNIT_NAME)[1] or "unknown"
            active = _systemctl("is-active", UNIT_NAME)[1] or "unknown"
            lines.append(f"  systemd: {enabled}, {active}")
        else:
            lines.append("  systemd: no user manager reachable from here (not enabled by svc)")
    return True, lines
