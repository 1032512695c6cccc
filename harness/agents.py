"""The real coding-agent CLIs `make test-fixtures` installs from npm into tests/fixtures/agents,
and the throw-away HOMEs they run in (never the developer's ~).

Codex refuses to create its helper binaries under the temporary directory ("/tmp"), so the HOMEs
live under /var/tmp. See docs/agents.md and ../shared/reference/real-agents.md.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENTS_DIR = ROOT / "tests" / "fixtures" / "agents"
BIN = AGENTS_DIR / "node_modules" / ".bin"
HOMES_ROOT = Path("/var/tmp")

# Variables that move an agent's folders, choose its provider or carry someone's credentials:
# a test agent must see only what the test gives it.
_FOREIGN_PREFIXES = ("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "QWEN_", "CODEX_", "CLAUDE")
_FOREIGN_NAMES = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")

# No update checks, telemetry or model catalogue downloads: the tests run offline.
QUIET = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "QWEN_TELEMETRY_ENABLED": "false",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "NO_UPDATE_NOTIFIER": "1",
    "npm_config_update_notifier": "false",
}


def binary(name: str) -> Path:
    """The installed CLI; a missing one fails the test with how to install it (never a skip)."""
    path = BIN / name
    if not path.exists():
        raise AssertionError(
            f"{name} is not installed in {BIN}: run `make test-fixtures` (it installs the agent "
            "CLIs of tests/fixtures/agents/package-lock.json from npm)"
        )
    return path


def _foreign(name: str) -> bool:
    return name.startswith(_FOREIGN_PREFIXES) or name in _FOREIGN_NAMES


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of an agent CLI (or of a daemon hosting them) in the throw-away `home`."""
    env = {k: v for k, v in os.environ.items() if not _foreign(k) and not k.startswith("SVC_")}
    env.update(QUIET)
    env.update(HOME=str(home), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    env.update(extra)
    return env


@contextmanager
def throwaway_home(prefix: str = "svc-agents-") -> Iterator[Path]:
    """A fresh HOME outside /tmp, removed afterwards with any process still running in it."""
    home = Path(tempfile.mkdtemp(prefix=prefix, dir=HOMES_ROOT))
    try:
        yield home
    finally:
        kill_processes_in(home)
        shutil.rmtree(home, ignore_errors=True)


def processes_in(home: Path) -> list[int]:
    """Pids of the processes whose environment says HOME=`home` (the agents and their children)."""
    marker = f"HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def kill_processes_in(home: Path) -> list[int]:
    pids = processes_in(home)
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def run_cli(
    argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 90
) -> subprocess.CompletedProcess:
    """Run a CLI to completion in its own process group, and stop whatever it left running."""
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{argv[0]} did not finish in {timeout}s:\n{out}\n{err}") from None
    finally:
        _kill_group(proc.pid)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    time.sleep(0.05)
