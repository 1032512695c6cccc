"""The first hour on a fresh machine, in the dashboard (issue 43, items 3–5), in Debian's Chromium
against a live daemon:

3. agents that are not installed were invisible: Sessions → Agent listed only `shell`. Now the
   built-ins that are not installed are offered greyed, each with its install line (GET
   /api/agents `install`), and "Check again" finds one installed since;
4. Save agent showed nothing for the seconds its check took, the table followed only after it,
   and leaving mid-save put a traceback in svc.log. Now the save says it is working (after
   300 ms) and then its result, the table shows the saved row at once, a double click saves once,
   and a client that leaves leaves one quiet line;
5. the down banner said `make run` (port 8000, the default home): it now gives the command that
   starts svc again as it ran, and that command, run as given from elsewhere, brings the page back.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon, migrated_home
from harness.dashboard import show
from harness.holders import end_holder
from tests.e2e.test_remote_tunnel import Remote

VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}
INSTALL = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "codex": "npm install -g @openai/codex",
    "gemini": "npm install -g @google/gemini-cli",
    "opencode": "npm install -g opencode-ai",
    "qwen": "npm install -g @qwen-code/qwen-code",
}
ALARMING = ("Traceback", "took too long", "Exception inside application", "CurrentThreadExecutor")
INITIALIZED = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"protocolVersion": 1, "agentInfo": {"name": "slowpoke", "version": "1.0"}},
    }
)


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def slow_acp_agent(folder: Path, seconds: float) -> Path:
    """An ACP agent that answers `initialize` only after `seconds` (what an npx adapter that is
    fetched first looks like to svc's check); it leaves `<name>.done` when it has waited."""
    name = f"slow-{seconds:g}s"
    done = folder / f"{name}.done"
    return executable(
        folder / name,
        f"#!/bin/sh\nsleep {seconds}\ntouch '{done}'\nIFS= read -r line\n"
        f"printf '%s\\n' '{INITIALIZED}'\nsleep 30\n",
    )


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A fresh machine: no agent CLI on svc's PATH (only its own bin folder, empty, and the
    system's), its own HOME for the agents' configs."""
    tmp = tmp_path_factory.mktemp("first-hour")
    (tmp / "bin").mkdir()
    (tmp / "user-home").mkdir()
    env = {"PATH": f"{tmp / 'bin'}:/usr/bin:/bin", "HOME": str(tmp / "user-home")}
    server = Daemon(migrated_home(tmp / "home", {"workspaces": [str(tmp)]}), env=env).start()
    yield server
    server.stop()


def bin_dir(svc: Daemon) -> Path:
    return Path(svc.env["PATH"].split(":")[0])


def open_page(browser: Browser, svc: Daemon, size: str = "desktop") -> Page:
    page = browser.new_context(**VIEWPORTS[size]).new_page()
    page.goto(f"{svc.url}/login?token={svc.owner_token}")
    expect(page.locator("#new-agent option[value=shell]")).to_have_count(1, timeout=30_000)
    return page


def new_log(svc: Daemon, since: int) -> str:
    return (svc.home / "logs" / "svc.log").read_bytes()[since:].decode(errors="replace")


# --- 3: agents that are not installed ---------------------------------------------------------


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_agents_not_installed_are_offered_greyed_with_how_to_install_them(
    browser: Browser, svc: Daemon, size: str
) -> None:
    page = open_page(browser, svc, size)
    try:
        picker = page.locator("#new-agent")
        expect(picker.locator("option[value=shell]")).to_be_enabled()
        for name in INSTALL:
            option = picker.locator(f"option[value={name}]")
            expect(option).to_be_disabled()
            expect(option).to_have_text(f"{name} — not installed")
        listing = page.locator("#not-installed")
        expect(listing.locator("summary")).to_contain_text("claude, codex, gemini, opencode, qwen")
        listing.locator("summary").click()
        for name, command in INSTALL.items():
            expect(listing.locator(f"li[data-agent={name}] code")).to_have_text(command)
        expect(listing.locator("li[data-agent=claude] button")).to_have_accessible_name(
            "Copy the install command of claude"
        )
        # The settings' agents table says the same where it said "not found".
        show(page, "settings")
        for name, command in INSTALL.items():
            cell = page.locator(f"#agents tr[data-agent={name}] td").nth(1)
            expect(cell).to_contain_text(f"not installed: {command}")
    finally:
        page.context.close()


def test_an_agent_installed_while_svc_runs_is_found_by_check_again(
    browser: Browser, svc: Daemon
) -> None:
    page = open_page(browser, svc)
    fake = bin_dir(svc) / "qwen"
    try:
        page.wait_for_load_state("networkidle")  # no look at PATH in flight from the load
        expect(page.locator("#new-agent option[value=qwen]")).to_be_disabled()
        executable(fake, '#!/bin/sh\nexec sh "$@"\n')  # "installed" as the user would have
        page.locator("#not-installed summary").click()
        page.locator("#agents-check-again").click()
        expect(page.locator("#not-installed-status")).to_have_text("found qwen: pick it above")
        expect(page.locator("#new-agent option[value=qwen]")).to_be_enabled()
        expect(page.locator("#not-installed li[data-agent=qwen]")).to_have_count(0)
        rows = httpx.get(f"{svc.url}/api/agents", headers=svc.owner_headers()).json()
        qwen = next(a for a in rows if a["name"] == "qwen")
        assert qwen["enabled"] and qwen["executable_found"]
    finally:
        fake.unlink(missing_ok=True)
        httpx.get(f"{svc.url}/api/agents", headers=svc.owner_headers())  # forgets it again
        page.context.close()


# --- 4: a save that takes seconds ---------------------------------------------------------------


def fill_agent(page: Page, name: str, acp: str = "", command: str = "") -> None:
    form = page.locator("#agent-form")
    form.locator("button[type=reset]").click()
    form.locator("input[name=agent_name]").fill(name)
    form.locator("input[name=command]").fill(command)
    form.locator("input[name=acp_command]").fill(acp)


def test_a_slow_save_says_it_is_working_then_its_result_and_the_table_follows(
    browser: Browser, svc: Daemon
) -> None:
    # Slow enough that the busy state shows before the result on a loaded machine: the test
    # waits on what the page shows, never on the clock.
    agent = slow_acp_agent(bin_dir(svc), 6)
    page = open_page(browser, svc)
    puts: list[str] = []
    page.on("request", lambda r: puts.append(r.url) if r.method == "PUT" else None)
    try:
        show(page, "settings")
        page.evaluate("window.notReloaded = true")
        status = page.locator("#agent-status")
        fill_agent(page, "slow-one", acp=str(agent))
        page.locator("#agent-form button[type=submit]").dblclick()  # saved once
        # Before the check's answer: the row is in the table and the form says what it is doing.
        expect(page.locator("#agents tr[data-agent=slow-one]")).to_be_visible()
        expect(status).to_have_text("saved slow-one; checking that it starts…")
        expect(status).to_have_attribute("aria-busy", "true")
        expect(page.locator("#agent-form button[type=submit]")).to_have_attribute(
            "aria-disabled", "true"
        )
        expect(status).to_have_text(
            "saved slow-one — checked: answered ACP initialize (slowpoke 1.0)", timeout=20_000
        )
        expect(status).not_to_have_attribute("aria-busy", "true")
        assert len(puts) == 1, puts
        # A second save straight after: both rows, no reload.
        fill_agent(page, "quick-two", command="sh")
        page.locator("#agent-form button[type=submit]").click()
        expect(status).to_have_text("saved quick-two — checked: 'sh' found at /usr/bin/sh")
        expect(page.locator("#agents tr[data-agent=slow-one]")).to_be_visible()
        expect(page.locator("#agents tr[data-agent=quick-two]")).to_be_visible()
        assert page.evaluate("window.notReloaded") is True
    finally:
        page.context.close()


def test_leaving_the_page_mid_save_puts_no_traceback_in_svc_log(
    browser: Browser, svc: Daemon
) -> None:
    """The check outlasts daphne's 10 s for an application whose client left."""
    agent = slow_acp_agent(bin_dir(svc), 12)
    done = agent.with_name(f"{agent.name}.done")
    since = (svc.home / "logs" / "svc.log").stat().st_size
    page = open_page(browser, svc)
    try:
        show(page, "settings")
        fill_agent(page, "slow-left", acp=str(agent))
        page.locator("#agent-form button[type=submit]").click()
        time.sleep(1)
        page.goto("about:blank")  # the person goes elsewhere while the check runs
        deadline = time.monotonic() + 30
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.exists(), "the check never ran"
        time.sleep(2)  # the check answers and ends its agent; the request ends
    finally:
        page.context.close()
    said = new_log(svc, since)
    assert not [word for word in ALARMING if word in said], said
    quiet = [line for line in said.splitlines() if "the client left before the answer" in line]
    assert len(quiet) == 1, said  # one quiet line, that the client left
    rows = httpx.get(f"{svc.url}/api/agents", headers=svc.owner_headers()).json()
    assert "slow-left" in [a["name"] for a in rows]  # saved all the same


def test_the_check_route_is_the_owners_on_the_main_port_only(svc: Daemon) -> None:
    httpx.put(
        f"{svc.url}/api/agents/probe", json={"command": ["sh"]}, headers=svc.owner_headers()
    ).raise_for_status()
    url = f"{svc.url}/api/agents/probe/check"
    owner = httpx.post(url, headers=svc.owner_headers(), timeout=30)
    assert owner.status_code == 200
    assert owner.json() == {"ok": True, "message": "'sh' found at /usr/bin/sh"}
    unknown = httpx.post(f"{svc.url}/api/agents/nobody/check", headers=svc.owner_headers())
    assert unknown.status_code == 404
    for headers in ({}, {"Authorization": f"Bearer {svc.mcp_token}"}):
        refused = httpx.post(url, headers=headers)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "not_authenticated"
    quick = httpx.put(
        f"{svc.url}/api/agents/probe?check=0", json={"command": ["sh"]}, headers=svc.owner_headers()
    )
    assert quick.status_code == 200 and "check" not in quick.json()
    remote = Remote(svc, svc.auth()["remote_port"])
    with remote.client() as client:
        key = {"X-Svc-Page-Key": remote.pair(client)["page_key"]}
        assert client.get("/api/agents", headers=key).status_code == 200
        refused = client.post("/api/agents/probe/check", headers=key)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "main_port_only"


# --- 5: the down banner -------------------------------------------------------------------------


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_the_down_banner_gives_the_command_that_starts_svc_again_as_it_ran(
    browser: Browser, tmp_path: Path, size: str
) -> None:
    home = migrated_home(tmp_path / "a home of its own")  # a space: the command quotes it
    server = Daemon(home).start()  # a free port, never 8000
    page = open_page(browser, server, size)
    again: subprocess.Popen | None = None
    try:
        expect(page.locator("#banner")).to_be_hidden()
        server.stop(keep_sessions=True)
        banner = page.locator("#banner")
        expect(banner).to_contain_text("svc is not answering", timeout=15_000)
        expect(banner).not_to_contain_text("make run")
        command = banner.locator("#banner-command").inner_text()
        assert f"bin/svc run --port {server.port}" in command, command
        assert command.startswith(f"SVC_HOME='{home}' "), command
        # Followed literally, from another folder, in a shell without svc's variables.
        env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
        log = (tmp_path / "again.log").open("wb")
        again = subprocess.Popen(
            ["sh", "-c", command],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        expect(banner).to_be_hidden(timeout=60_000)  # the page reconnected by itself
        show(page, "sessions")
        expect(page.locator("#new-agent option[value=shell]")).to_have_count(1)
        assert again.poll() is None
    finally:
        page.context.close()
        if again is not None and again.poll() is None:
            os.killpg(again.pid, signal.SIGTERM)
            again.wait(30)
        end_holder(home)
        server.stop()
