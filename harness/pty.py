"""A command on a real terminal, as a person runs the CLI: stdin, stdout and stderr a pty."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path


def run_in_pty(
    command: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 60
) -> tuple[int, str]:
    """Its exit code and all of its output."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer has closed the terminal (it exited)
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        return proc.wait(10), seen.decode(errors="replace")
    finally:
        proc.kill()
        os.close(master)
