"""The daemon's secret variables — `DATABASE_URL` and `SVC_REDIS_URL` (their passwords) and the
fleet secret's (`fleet.secret_env`) — kept out of its environment (issue 41).

Every process of the owner's user, the agents svc hosts included, can read
`/proc/<svc's pid>/environ`, and that file shows the environment svc was *started* with: taking
a variable out of `os.environ` later changes what children inherit, never that file. So the
daemon, before Django loads, moves these variables into this module (`get` reads them) and, when
the kernel's copy of its environment shows one, executes itself again without them — same pid,
same arguments — handing their values over through a pipe. The re-exec costs one interpreter
start before any import of note (docs/security.md has the numbers). No child svc starts (agents,
tunnels, git) inherits them either.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cli.home import home_setting

HANDOFF = "SVC_SECRET_ENV_FD"  # the pipe's descriptor, in the re-executed daemon's environment
ALWAYS = ("DATABASE_URL", "SVC_REDIS_URL")
FLEET_SECRET_DEFAULT = "SVC_FLEET_SECRET"  # noqa: S105 (a variable name)
HANDOFF_MAX = 60_000  # under a pipe's 64 KiB buffer: written whole before the exec
_held: dict[str, str] = {}


def get(name: str, default: str = "") -> str:
    """The variable's value: the one svc holds, else the environment's (a command, not the
    daemon, holds none)."""
    return _held[name] if name in _held else os.environ.get(name, default)


def names() -> tuple[str, ...]:
    """The variables held: the two URLs and the fleet secret's, as settings.json names it (read
    here as plain JSON: Django and svc's settings are not loaded yet; a file that does not parse
    stops start-up later with its own message)."""
    fleet = {FLEET_SECRET_DEFAULT}
    try:
        raw = json.loads((Path(home_setting()).expanduser() / "settings.json").read_bytes())
        named = raw["fleet"]["secret_env"]
        if isinstance(named, str) and named:
            fleet.add(named)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return (*ALWAYS, *sorted(fleet))


def _shown_by_kernel() -> set[str] | None:
    """The names in /proc/self/environ (what other processes see); None without /proc, where
    (macOS) other processes of the user can read it too."""
    try:
        data = Path("/proc/self/environ").read_bytes()
    except OSError:
        return None
    entries = (entry for entry in data.split(b"\0") if entry)
    return {entry.split(b"=", 1)[0].decode(errors="replace") for entry in entries}


def _argv() -> list[str]:
    """This interpreter's own options (`-X dev`, `-u`) and the script's arguments, again."""
    tail = len(sys.argv)
    if len(sys.orig_argv) > tail and sys.orig_argv[-tail:] == sys.argv:
        return [sys.executable, *sys.orig_argv[1:-tail], *sys.argv]
    return [sys.executable, *sys.argv]  # started otherwise (a fork of a warm interpreter)


def _reexec(values: dict[str, str]) -> None:
    payload = json.dumps(values).encode()
    if len(payload) > HANDOFF_MAX:
        raise SystemExit(f"svc: cannot start: {', '.join(values)} hold over {HANDOFF_MAX} bytes")
    read, write = os.pipe()
    view = memoryview(payload)
    while view:
        view = view[os.write(write, view) :]
    os.close(write)
    os.set_inheritable(read, True)
    env = {k: v for k, v in os.environ.items() if k not in values} | {HANDOFF: str(read)}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, _argv(), env)  # noqa: S606 (this same program, its own argv)


def _take_handoff() -> None:
    fd = os.environ.pop(HANDOFF, "")
    if fd.isdigit():
        with os.fdopen(int(fd), "rb") as pipe:
            _held.update(json.loads(pipe.read() or b"{}"))


def hold() -> None:
    """In the daemon, first thing: the secret variables out of `os.environ` and, if the kernel
    shows them, out of the environment svc runs with (by executing itself again)."""
    _take_handoff()
    found = {name: os.environ[name] for name in names() if os.environ.get(name)}
    shown = _shown_by_kernel()
    if found and (shown is None or shown & found.keys()):
        _reexec({**_held, **found})  # does not return
    for name, value in found.items():
        _held[name] = value
        del os.environ[name]
