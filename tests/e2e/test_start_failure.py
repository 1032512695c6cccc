"""A daemon that binds its port but cannot start — here the Redis its channel layer was given is
not there — ends with one line and a non-zero exit, instead of holding a port that answers
nothing (docs/service.md)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness.daemon import PYTHON, ROOT, free_port, migrated_home


def test_a_start_that_fails_after_the_bind_exits_1_with_one_line(tmp_path: Path) -> None:
    home = migrated_home(tmp_path / "home")
    closed = free_port()  # nothing listens there
    env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
    env |= {"SVC_HOME": str(home), "SVC_REDIS_URL": f"redis://127.0.0.1:{closed}/0"}
    done = subprocess.run(
        [PYTHON, str(ROOT / "manage.py"), "runserver", "--noreload", f"127.0.0.1:{free_port()}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("svc: cannot start: ") and f"127.0.0.1:{closed}" in last, last
