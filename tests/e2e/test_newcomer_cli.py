"""What a new user hit: `bin/svc` works as the README writes it (outside the venv, from any
directory), a command never reprints the login URL, `turns --cancel` takes the short id the lists
print, and the dashboard's API link opens readable docs that need no network."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from harness.daemon import ROOT, Daemon
from harness.mcp import tool
from harness.pty import run_in_pty
from harness.termclient import start_hosting_daemon

SVC = ROOT / "bin" / "svc"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # no .venv/bin: `python3` is the system's


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-newcomer-cli"))
    yield server
    server.stop()


def outside_the_venv(host: Daemon) -> dict[str, str]:
    """A newcomer's shell: the system PATH, no activated virtualenv, no login-URL knob."""
    dropped = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "SVC_PRINT_LOGIN", "SVC_PORT")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, "PATH": SYSTEM_PATH, "SVC_HOME": str(host.home)}


def test_bin_svc_runs_the_cli_with_the_system_python_first_on_path(
    host: Daemon, tmp_path: Path
) -> None:
    assert os.access(SVC, os.X_OK)
    python3 = shutil.which("python3", path=SYSTEM_PATH)
    assert python3 is None or ".venv" not in python3
    result = subprocess.run(
        [str(SVC), "status", "--json"],
        cwd=tmp_path,
        env=outside_the_venv(host),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["running"] and status["url"] == host.url
    # Symlinked onto the PATH (~/.local/bin/svc), it still finds its clone.
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "svc").symlink_to(SVC)
    env = {**outside_the_venv(host), "PATH": f"{tmp_path / 'bin'}:{SYSTEM_PATH}"}
    listed = subprocess.run(
        ["svc", "sessions", "--json"], cwd="/", env=env, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert isinstance(json.loads(listed.stdout), list)


def test_bin_svc_says_to_run_make_run_when_the_venv_is_missing(tmp_path: Path) -> None:
    clone = tmp_path / "svc"
    (clone / "bin").mkdir(parents=True)
    shutil.copy2(SVC, clone / "bin" / "svc")
    result = subprocess.run(
        [str(clone / "bin" / "svc"), "status"],
        capture_output=True,
        text=True,
        env={"PATH": SYSTEM_PATH},
        timeout=30,
    )
    assert result.returncode == 1
    assert "run `make run` first" in result.stderr and str(clone) in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("command", [["status"], ["sessions"], ["turns"]], ids=lambda c: c[0])
def test_a_command_on_a_terminal_never_prints_the_login_url(
    host: Daemon, command: list[str]
) -> None:
    code, output = run_in_pty([str(SVC), *command], outside_the_venv(host), cwd=ROOT)
    assert code == 0, output
    assert "/login?token=" not in output and host.owner_token not in output
    assert "Open the dashboard" not in output


def test_turns_cancel_and_the_api_take_the_short_turn_id(host: Daemon, tmp_path: Path) -> None:
    agents = [{"name": "slow", "agent": "fake", "task": "sleep 60"}]
    made = asyncio.run(
        tool(host, "initialize_subagents", mode="parallel", cwd=str(tmp_path), agents=agents)
    )
    turn_id = made["turn_id"]
    short = turn_id[:8]
    assert short in host.manage("turns").stdout  # the short id the list prints
    headers = host.owner_headers()
    got = httpx.get(f"{host.url}/api/subagent-turns/{short}", headers=headers, timeout=30)
    assert got.status_code == 200 and got.json()["turn_id"] == turn_id
    too_short = httpx.get(f"{host.url}/api/subagent-turns/{turn_id[:3]}", headers=headers)
    assert too_short.status_code == 404
    cancelled = host.manage("turns", "--cancel", short, "--json")
    body = json.loads(cancelled.stdout)
    assert body["turn_id"] == turn_id and body["status"] == "cancelled"
    table = host.manage("turns", "--cancel", short[:5]).stdout  # finished: shown as it is
    assert short in table and "cancelled" in table


def test_the_api_link_opens_readable_docs_served_offline(browser: Browser, host: Daemon) -> None:
    assert httpx.get(f"{host.url}/api/docs/").status_code == 401  # owner-only, like /api/
    context = browser.new_context()
    try:
        dashboard = context.new_page()
        dashboard.goto(f"{host.url}/login?token={host.owner_token}")
        expect(dashboard.locator("h1")).to_have_text("svc")
        link = dashboard.get_by_role("link", name="API", exact=True)
        docs_url = link.evaluate("a => a.href")
        assert docs_url.endswith("/api/docs/")
        # The docs in a page of their own: the dashboard's requests cut short by leaving it
        # are not the docs' failures.
        page = context.new_page()
        failed: list[str] = []
        page.on(
            "response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None
        )
        page.on("requestfailed", lambda r: failed.append(f"failed {r.url}"))
        origin = docs_url.split("/api/")[0]
        outside: list[str] = []
        page.on(
            "request",
            lambda r: (
                None if r.url.startswith((origin, "data:", "blob:")) else outside.append(r.url)
            ),
        )
        page.goto(docs_url)
        expect(page.locator(".opblock-tag", has_text="sessions").first).to_be_visible(timeout=15000)
        expect(page.get_by_text("/api/sessions", exact=True).first).to_be_visible()
        expect(page.get_by_text("svc internal API").first).to_be_visible()
        page.wait_for_load_state("networkidle")
        assert failed == [] and outside == []  # every asset from svc itself, none missing
    finally:
        context.close()
