"""Another unix user on this machine: the attacker who shares the machine but not the account.

The attacks only such a user can make (a socket planted in a shared folder, a request to the
loopback routes from a process of theirs, reading a file svc wrote) run as a uid that is not
svc's. Switching uid needs root, which the suite has in CI; elsewhere these tests are skipped,
never under CI=true (a missing attacker would hide a missing defence). The attacker's programs
are stdlib-only Python run by the system's interpreter, which every user can execute (the
suite's own virtualenv may live in a folder only its owner can enter).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

OTHER_UID = 54321  # no passwd entry is needed to run as a uid
OTHER_GID = 54321


def require_root() -> None:
    if os.geteuid() == 0:
        return
    if os.environ.get("CI") == "true":
        pytest.fail("the attacks of another local user need root to switch uid (CI runs as root)")
    pytest.skip("switching to another uid needs root")


def system_python() -> str:
    """An interpreter another user can run: the system's, not one under this user's home."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("python3")
    if found is None:
        pytest.fail("no python3 another user could run")
    return found


def run_as_other(
    code: str, *, timeout: float = 30, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`code` run to its end by the system's Python as the other user; its output returned."""
    require_root()
    return subprocess.run(
        [system_python(), "-I", "-c", code],
        user=OTHER_UID,
        group=OTHER_GID,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def popen_as_other(code: str, *, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`code` started as the other user and left running (a planted listener); stdout piped."""
    require_root()
    return subprocess.Popen(
        [system_python(), "-I", "-u", "-c", code],
        user=OTHER_UID,
        group=OTHER_GID,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def readable_by_other(path: Path) -> bool:
    """Whether the other user can open `path` for reading (folders on the way included)."""
    result = run_as_other(
        f"import sys\ntry:\n    open({os.fspath(path)!r}, 'rb').close()\nexcept OSError:\n"
        "    sys.exit(1)\n"
    )
    return result.returncode == 0
