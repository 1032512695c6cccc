"""A newcomer's first command: `make run` in a fresh clone, fresh venv and fresh $SVC_HOME — and
what it says while it gets there (issue 43, friction 7: ~86 s of silence while `cp` lines
scrolled)."""

from __future__ import annotations

import json
import os
import re
import shutil
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
        # What it said on the way: one line per long step, no recipe lines.
        said = log.read_text().splitlines()
        assert any(line.startswith("svc: installing the dashboard's front-end") for line in said)
        assert any(line.startswith("svc: setting up the database of a new home") for line in said)
        assert not [line for line in said if line.startswith(("cp ", "npm ", "mkdir ", "rm "))]
        assert not [line for line in said if "manage.py" in line], said
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


PYTHON_STANDIN = """#!/bin/sh
# Stands in for Python where scripts/venv.sh and find-python.sh call it: new enough, a version
# line for the cache key, `-m venv DIR` makes DIR/bin/python (this script), pip and uv succeed.
case "$1 $2" in
    "-m venv") mkdir -p "$3/bin" && cp "$0" "$3/bin/python" ;;
    "-c import sys; print(sys.version)") echo "3.12.1 (stand-in)" ;;
esac
exit 0
"""


def test_the_virtualenv_step_says_what_it_does_when_it_makes_one(tmp_path: Path) -> None:
    """scripts/venv.sh with a stand-in Python (nothing installed): a line when it makes the
    virtualenv, nothing when the one it made is only linked in again."""
    clone = tmp_path / "clone"
    (clone / "scripts").mkdir(parents=True)
    for name in ("scripts/venv.sh", "scripts/find-python.sh", "requirements.txt",
                 "requirements-dev.txt", ".python-version"):  # fmt: skip
        shutil.copy(ROOT / name, clone / name)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "python3.13").write_text(PYTHON_STANDIN)
    (tools / "python3.13").chmod(0o755)
    env = {
        "PATH": os.pathsep.join([str(tools), "/usr/bin", "/bin"]),  # no pyenv
        "HOME": str(tmp_path),
        "SVC_VENV_CACHE": str(tmp_path / "cache"),
    }

    def venv() -> str:
        made = subprocess.run(
            ["bash", "scripts/venv.sh", "base"],
            cwd=clone, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        return made.stdout + made.stderr

    said = venv()
    assert said.startswith("svc: creating the virtualenv with svc's Python packages in "), said
    assert said.rstrip().endswith("(the first time ~1 min)…") and len(said.splitlines()) == 1
    assert (clone / ".venv" / "bin" / "python").exists()
    (clone / ".venv").unlink()  # a second clone of the same requirements: linked, silently
    assert venv() == ""


NPM_STANDIN = """#!/bin/sh
# Stands in for `npm install`: the modules are this clone's own, linked in.
ln -s "$MODULES" node_modules
"""


def test_the_front_end_step_is_one_line(tmp_path: Path) -> None:
    """The Makefile's static/vendor rule, run by make with a stand-in npm: one line saying what
    it does, not the dozen `cp` lines it printed, and every module copied."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("Makefile", "package.json", "package-lock.json"):
        shutil.copy(ROOT / name, clone / name)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "npm").write_text(NPM_STANDIN)
    (tools / "npm").chmod(0o755)
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(tools), os.environ["PATH"]]),
        "MODULES": str(ROOT / "node_modules"),
    }
    made = subprocess.run(
        ["make", "--no-print-directory", "static/vendor/.installed"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert (made.stdout + made.stderr).splitlines() == [
        "svc: installing the dashboard's front-end modules (npm; the first time ~30 s)…"
    ]
    vendor = sorted(p.name for p in (clone / "static" / "vendor").iterdir())
    assert vendor == sorted(p.name for p in (ROOT / "static" / "vendor").iterdir()), vendor
