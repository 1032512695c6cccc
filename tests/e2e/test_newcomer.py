"""A newcomer's first command: `make run` in a fresh clone, fresh venv and fresh $SVC_HOME."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.browser_login import localhost_client
from harness.daemon import ROOT, free_port

LOGIN = re.compile(rb"(http://127\.0\.0\.1:\d+/login\?token=[0-9a-f]{64})")


def wait_for_login_url(proc: subprocess.Popen, log: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = LOGIN.search(log.read_bytes())
        if found:
            return found.group(1).decode()
        if proc.poll() is not None:
            raise AssertionError(f"make run exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    raise AssertionError(f"no login URL after {timeout}s:\n{log.read_text()[-3000:]}")


@pytest.mark.timeout(600)
def test_make_run_in_a_fresh_clone_serves_the_dashboard_and_admin(tmp_path: Path) -> None:
    clone = tmp_path / "svc"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    port = free_port()
    log = tmp_path / "make-run.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "VIRTUAL_ENV"))}
    env["SVC_HOME"] = str(tmp_path / "home")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["make", "run", f"PORT={port}"],
            cwd=clone,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = wait_for_login_url(proc, log, timeout=400)
        assert url.startswith(f"http://127.0.0.1:{port}/login?token=")
        home_auth = json.loads((tmp_path / "home" / "auth.json").read_text())
        dashboard_host = f"http://{home_auth['browser_host']}:{port}"
        with localhost_client(base_url=dashboard_host) as browser:
            assert browser.get(f"http://127.0.0.1:{port}/api/sessions").status_code == 401
            assert browser.get("/").status_code == 401
            # The printed URL hands the browser over to svc's own host name, then to the page.
            login = browser.get(url, follow_redirects=True)
            assert login.status_code == 200 and str(login.url) == f"{dashboard_host}/"
            dashboard = browser.get("/")
            assert dashboard.status_code == 200 and "<title>svc</title>" in dashboard.text
            admin = browser.get("/admin/")
            assert admin.status_code == 200 and "Sessions" in admin.text
            assert browser.get("/static/vendor/xterm.js").status_code == 200
        # `make run PORT=…` and `runserver 127.0.0.1:…` agree: the bound port is in auth.json.
        assert json.loads((tmp_path / "home" / "auth.json").read_text())["port"] == port
        assert (clone / ".venv" / "bin" / "python").exists()
        assert (tmp_path / "home" / "db.sqlite3").exists()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
