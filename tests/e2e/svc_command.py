"""Running `bin/svc` as a user does, for the daemon-as-a-daemon tests."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx

from harness.daemon import ROOT

SVC = ROOT / "bin" / "svc"
START_LIMIT_S = 90  # a cold interpreter, Django's checks and a migrate, on a busy machine


def svc_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
    return {**env, "SVC_HOME": str(home), **extra}


def svc(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SVC), *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


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
