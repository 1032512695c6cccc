"""The suite's daemons start from a warm interpreter (a fork server) instead of a cold one.

A cold `python manage.py runserver` spends about 1.1 s of CPU importing third-party libraries
before any of svc's code runs (the MCP and ACP SDKs alone build hundreds of pydantic models), and
the suite starts about a hundred daemons on two cores. One server per pytest process imports
those libraries once (nothing of svc's, nothing that reads settings or the environment; no
thread, event loop or reactor exists when it forks) and forks a child per daemon. The child
becomes what `python manage.py …` would be: its own session, environment, working directory and
log, `manage.py` run as `__main__`, and the interpreter's normal exit. Tests that are about how
the process is started (`make run`, a wrapper ignoring signals, start at bind) exec a cold one,
and so does a command given PYTHON* variables (they act when an interpreter starts).

Protocol, one Unix-socket connection per start: the client sends one JSON line (argv, env, cwd,
stdout and stderr files); a waiter forked for it answers the child's pid on one line, then its
exit code (negative for a signal, as `subprocess` says it) when the child ends.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# Settings-free libraries svc imports at start or when it hosts an agent.
PRELOAD = (
    "acp",
    "anyio",
    "autobahn.websocket.protocol",
    "channels.generic.websocket",
    "channels.routing",
    "daphne.ws_protocol",  # not daphne.server, which installs the reactor
    "django.core.management.base",
    "django.db.models",
    "django.http",
    "django.test",
    "django.urls",
    "httpx",
    "markdown",
    "mcp.server.mcpserver",
    "mcp.server.streamable_http_manager",
    "mcp.server.transport_security",
    "OpenSSL.SSL",
    "psycopg",  # Django REST framework imports it (through django.contrib.postgres) when present
    "pydantic",
    "requests",
    "rest_framework.serializers",
    "sqlite3",
    "twisted.internet.defer",
    "twisted.internet.protocol",
    "twisted.internet.ssl",
    "twisted.internet.tcp",
    "twisted.trial.unittest",  # daphne imports twisted.internet.testing, which imports it
    "websockets.asyncio.client",
    "yaml",
)


# --- the server (run as `python -m harness.warm_start <socket>`) -------------------------


def preload() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    # What a forked child must not inherit: it would share it with every other daemon.
    assert "twisted.internet.reactor" not in sys.modules, "a reactor was installed"
    assert "django.conf" not in sys.modules or not _settings_configured(), "settings were read"
    assert threading.active_count() == 1, "a thread was started"
    # Kept out of the cyclic collector's walks in every child (and their pages shared): the
    # daemon's own gc.collect() at bind then walks only what the child made.
    gc.collect()
    gc.freeze()


def _settings_configured() -> bool:
    from django.conf import settings

    return settings.configured


def serve(path: str) -> dict[str, Any]:
    """Accept starts until killed; returns (in the forked daemon only) the start's request."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the waiters reap themselves
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            return _wait_for_one(conn)
        conn.close()


def _wait_for_one(conn: socket.socket) -> dict[str, Any]:
    """In the waiter: fork the daemon, tell its pid, wait, tell its exit code."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    request = json.loads(conn.makefile("r").readline())
    pid = os.fork()
    if pid == 0:
        conn.close()
        _become(request)
        return request
    conn.sendall(f"{pid}\n".encode())
    _, status = os.waitpid(pid, 0)
    conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
    os._exit(0)


def _become(request: dict[str, Any]) -> None:
    """What Popen(argv, cwd=, env=, stdout=log, stderr=STDOUT, start_new_session=True) sets up."""
    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    opened = [os.open(os.devnull, os.O_RDONLY)]
    opened += [
        os.open(request[name], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        for name in ("stdout", "stderr")
    ]
    for fd, source in enumerate(opened):
        if source != fd:
            os.dup2(source, fd)
            os.close(source)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def main() -> None:
    preload()
    request = serve(sys.argv[1])
    script, *args = request["argv"]
    sys.argv = [script, *args]
    sys.path[0] = str(Path(script).resolve().parent)
    runpy.run_path(script, run_name="__main__")


# --- the client ---------------------------------------------------------------------------------


class WarmProcess:
    """The part of subprocess.Popen the tests use, for a daemon forked by the server."""

    def __init__(self, args: list[str], conn: socket.socket) -> None:
        self.args = args
        self._conn = conn
        self._buffer = b""
        self.pid = int(self._line(timeout=30))
        self.returncode: int | None = None

    def _line(self, timeout: float | None) -> str:
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._conn], [], [], timeout)
            if not ready:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            chunk = self._conn.recv(64)
            if not chunk:
                return "-9"  # the waiter was killed: the daemon's fate is unknown
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = int(self._line(timeout=0))
            except subprocess.TimeoutExpired:
                return None
            self._conn.close()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = int(self._line(timeout))
            self._conn.close()
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _Server:
    def __init__(self) -> None:
        self.path = os.path.join(tempfile.mkdtemp(prefix="svc-warm-"), "sock")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.warm_start", self.path],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline() != b"ready\n":
            raise RuntimeError(f"the warm-start server did not start ({self.proc.wait()})")
        atexit.register(self.stop)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


_server: _Server | None = None


def warm_popen(argv: list[str], *, env: dict[str, str], cwd: Path, log: Path) -> WarmProcess:
    """Start `argv` (a Python script and its arguments) in a child of the warm server, its
    stdout and stderr appended to `log`."""
    return _start(argv, env, cwd, stdout=log, stderr=log)


def warm_run(
    argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True, text=True, timeout=…) through the warm server."""
    with tempfile.TemporaryDirectory(prefix="svc-warm-run-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        proc = _start(argv, env, cwd, stdout=out, stderr=err)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            raise
        return subprocess.CompletedProcess(argv, code, _text(out), _text(err))


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def warm_enough(env: dict[str, str]) -> bool:
    """A fork cannot honour what acts when an interpreter starts."""
    return not any(k.startswith("PYTHON") and os.environ.get(k) != v for k, v in env.items())


def _start(argv: list[str], env: dict[str, str], cwd: Path, *, stdout: Path, stderr: Path):
    global _server
    if _server is None or _server.proc.poll() is not None:
        _server = _Server()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(_server.path)
    request = {"argv": argv, "env": env, "cwd": str(cwd), "stdout": str(stdout)}
    request["stderr"] = str(stderr)
    conn.sendall((json.dumps(request) + "\n").encode())
    return WarmProcess(argv, conn)


if __name__ == "__main__":
    main()
