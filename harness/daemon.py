"""A real svc daemon for end-to-end tests: `manage.py runserver` with its own $SVC_HOME.

Tests talk to it only over sockets (HTTP, WebSocket, MCP), as users and agents do. The process
is forked from a warm interpreter that has already imported the third-party libraries
(harness/warm_start.py) unless a test is about how it is started (`cold=True`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from harness.holders import end_holder
from harness.warm_start import WarmProcess, warm_enough, warm_popen, warm_run

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(
    home: Path,
    *args: str,
    env: dict[str, str] | None = None,
    check: bool = True,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """`python manage.py *args` with this $SVC_HOME, from the warm interpreter when it can."""
    full_env = {**os.environ, "SVC_HOME": str(home), **(env or {})}
    full_env.pop("SVC_PRINT_LOGIN", None)
    argv = [str(ROOT / "manage.py"), *args]
    if warm_enough(full_env):
        result = warm_run(argv, env=full_env, cwd=ROOT, timeout=timeout)
    else:  # PYTHON* variables act when an interpreter starts: a cold one
        result = subprocess.run(
            [PYTHON, *argv], env=full_env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
    if check:
        result.check_returncode()
    return result


# What `nohup make run &` does to svc: SIGHUP, SIGINT and SIGQUIT ignored, and inherited.
IGNORING_SIGNALS = (
    PYTHON,
    "-c",
    "import os, signal, sys\n"
    "for s in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT): signal.signal(s, signal.SIG_IGN)\n"
    "os.execv(sys.argv[1], sys.argv[1:])",
)


@dataclass
class Daemon:
    home: Path
    port: int = field(default_factory=free_port)
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | WarmProcess | None = None
    log_path: Path | None = None
    wrapper: tuple[str, ...] = ()  # a command the daemon is started through (IGNORING_SIGNALS)
    cold: bool = False  # exec a fresh interpreter, as `make run` does (harness.warm_start)
    host: str = "127.0.0.1"  # the address runserver binds ("::1": IPv6 loopback)

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.netloc}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.netloc}"

    @property
    def origin(self) -> str:
        return self.url

    def auth(self) -> dict:
        return json.loads((self.home / "auth.json").read_text())

    @property
    def owner_token(self) -> str:
        return self.auth()["owner_token"]

    @property
    def mcp_token(self) -> str:
        return self.auth()["mcp_token"]

    def owner_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.owner_token}"}

    def process_env(self) -> dict[str, str]:
        # No SVC_PORT: the daemon learns its port from the address runserver binds.
        env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
        return {**env, "SVC_HOME": str(self.home), **self.env}

    def start(self, timeout: float = 30) -> Daemon:
        self.log_path = self.home / "logs" / "daemon-stdout.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # What `make run` starts: daphne's runserver, whose access log goes through svc's
        # logging (and so through its token redaction). Its system checks run at every start
        # (daphne's runserver ignores --skip-checks).
        argv = [str(ROOT / "manage.py"), "runserver", "--noreload", self.netloc]
        env = self.process_env()
        if self.cold or self.wrapper or not warm_enough(env):
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(
                    [*self.wrapper, PYTHON, *argv],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        else:
            self.proc = warm_popen(argv, env=env, cwd=ROOT, log=self.log_path)
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"svc exited at start:\n{self.log()}")
            try:
                httpx.get(f"{self.url}/login", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError(f"svc did not answer within {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def stop(self, timeout: float = 15, *, keep_sessions: bool = False) -> int | None:
        """SIGTERM svc and wait. Its held sessions keep running (host.on_exit "keep") only with
        `keep_sessions`; else their holder is ended too, as a test done with svc must."""
        if self.proc is None:
            if not keep_sessions:
                end_holder(self.home)
            return None
        try:
            return self._stop(timeout)
        finally:
            if not keep_sessions:
                end_holder(self.home)

    def _stop(self, timeout: float) -> int | None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        code = self.proc.returncode
        self.proc = None
        return code

    def kill(self) -> None:
        """SIGKILL svc alone (a crash, the OOM killer): its holder and sessions stay."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.proc = None

    def interrupt(self, timeout: float = 15) -> int | None:
        """Ctrl-C in the terminal that runs `make run` (SIGINT): svc stops as it does at SIGTERM,
        its held sessions left to their holder (host.on_exit "keep")."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout)
        self.proc = None
        return code

    def restart(self, *, keep_sessions: bool = True) -> Daemon:
        """Stop and start again, as a person restarting svc: held sessions are taken back."""
        self.stop(keep_sessions=keep_sessions)
        return self.start()

    def manage(self, *args: str, check: bool = True, env: dict[str, str] | None = None):
        return manage(
            self.home,
            *args,
            env={**self.env, **(env or {})},
            check=check,
        )


_template_home: Path | None = None


def migrated_home(tmp: Path, settings: dict | None = None) -> Path:
    """A fresh $SVC_HOME with a migrated SQLite database (copied from one migrated template)."""
    global _template_home
    if _template_home is None:
        _template_home = Path(os.environ.get("SVC_TEST_TEMPLATE") or tmp.parent / "svc-template")
        if not (_template_home / "db.sqlite3").exists():
            _template_home.mkdir(parents=True, exist_ok=True)
            manage(_template_home, "migrate", "--noinput", "-v", "0")
    home = tmp
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(_template_home / "db.sqlite3", home / "db.sqlite3")
    if settings is not None:
        (home / "settings.json").write_text(json.dumps(settings, indent=2))
    return home
