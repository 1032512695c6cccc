"""settings.json is never lost (issue 34, friction 1 and acceptance 4): settings.json is edited by
hand while svc runs — a new "tunnels" block with a trailing comma — and then, in Debian's Chromium
at a desktop and a phone size, against a live daemon:

- the dashboard's banner names the file's line and column (axe-clean, no sideways scrolling);
- `bin/svc status` (the stdlib client) and `manage.py status` say settings.json is broken, where;
- GET /api/status has `settings_error` with the line and column;
- saving a profile in the dashboard is refused with a message saying why and what to do, and the
  file is, byte for byte, the text written by hand;
- once the file is fixed by hand the banner goes, the same save works, the hand-written `tunnels`
  block is kept, and settings.json.bak holds the file as it was before that save.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import ROOT, Daemon, migrated_home
from harness.dashboard import show

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}
SETTINGS: dict[str, Any] = {
    "profiles": {
        "openai": {
            "provider": "openai-chat",
            "base_url": "https://api.openai.com/v1",
            "api_key_env": "SVC_TEST_UNSET_KEY",
        }
    },
    "agents": {name: {"enabled": False} for name in ("claude", "gemini", "opencode", "qwen")},
}
TUNNEL_LINE = '    "phone": {"provider": "ssh", "enabled": false, "host": "me@example.org"}'


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Daemon]:
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    env = {  # the agents' config files svc writes its MCP entry into stay in the test's folder
        "HOME": str(user_home),
        "CLAUDE_CONFIG_DIR": str(user_home / ".claude"),
        "CODEX_HOME": str(user_home / ".codex"),
        "GEMINI_CLI_HOME": str(user_home),
        "QWEN_HOME": str(user_home / ".qwen"),
        "XDG_CONFIG_HOME": str(user_home / ".config"),
    }
    server = Daemon(migrated_home(tmp_path / "home", SETTINGS), env=env).start()
    yield server
    server.stop()


@pytest.fixture(params=list(VIEWPORTS))
def page(request: pytest.FixtureRequest, browser: Browser, svc: Daemon) -> Iterator[Page]:
    context = browser.new_context(**VIEWPORTS[request.param])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.js_errors = errors  # type: ignore[attr-defined]
    page.goto(f"{svc.url}/login?token={svc.owner_token}")
    expect(page.locator("h1")).to_have_text("svc")
    show(page, "settings")
    expect(page.locator('#profiles tr[data-profile="openai"]')).to_be_attached(timeout=45000)
    yield page
    context.close()


def hand_edit(text: str) -> tuple[str, int]:
    """The file with a new "tunnels" block whose entry ends in a trailing comma, and the line the
    parser stops at (the block's closing brace, column 3)."""
    body = text.rstrip()
    assert body.endswith("}")
    edited = body[:-1].rstrip() + ',\n  "tunnels": {\n' + TUNNEL_LINE + ",\n  }\n}\n"
    lines = edited.splitlines()
    return edited, lines.index(TUNNEL_LINE + ",") + 2


def save_profile(page: Page, profile_id: str) -> None:
    form = page.locator("#profile-form")
    form.locator("input[name=profile_id]").fill(profile_id)
    form.locator("input[name=base_url]").fill("http://127.0.0.1:11434/v1")
    form.locator("input[name=models]").fill("llama3")
    form.locator("button[type=submit]").click()


def run(svc: Daemon, *command: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
    return subprocess.run(
        list(command),
        env={**env, "SVC_HOME": str(svc.home)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_hand_edit_svc_cannot_read_is_shown_everywhere_and_never_written_over(
    page: Page, svc: Daemon
) -> None:
    path = svc.home / "settings.json"
    banner = page.locator("#settings-problem")
    expect(banner).to_be_hidden()
    edited, line = hand_edit(path.read_text())
    path.write_text(edited)
    where = f"line {line}, column 3"

    # The dashboard: a banner with the file, the line and the column.
    expect(banner).to_be_visible(timeout=15000)
    expect(banner).to_contain_text(f"settings.json {where}: not valid JSON")
    expect(banner).to_contain_text("fix it by hand")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run('#settings-problem')).violations")
    assert [v["id"] for v in found if v["impact"] in ("serious", "critical")] == []

    # The API and both command-line paths.
    with httpx.Client(base_url=f"{svc.url}/api", timeout=10) as api:
        error = api.get("/status", headers=svc.owner_headers()).json()["settings_error"]
        assert api.get("/status").status_code == 401  # the owner's, like the rest of /api/
    assert (error["line"], error["column"]) == (line, 3)
    assert error["message"].startswith(f"{path} {where}: not valid JSON")
    fast = run(svc, str(ROOT / "bin" / "svc"), "status")
    assert fast.returncode == 0, fast.stderr
    assert f"settings.json is broken, fix it by hand: {path} {where}" in fast.stdout
    assert f"svc is running at {svc.url}" in fast.stdout
    # Every Django command reads settings.json as it starts, so manage.py stops, saying where.
    slow = run(svc, str(ROOT / ".venv" / "bin" / "python"), "manage.py", "status")
    assert slow.returncode == 2 and f"{path} {where}: not valid JSON" in slow.stderr

    # A save from the dashboard is refused, saying why; the file is the hand-written text.
    save_profile(page, "local")
    status = page.locator("#profile-status")
    expect(status).to_contain_text(f"settings.json {where}")
    expect(status).to_contain_text("fix the file by hand first")
    assert path.read_bytes() == edited.encode()
    assert not (svc.home / "settings.json.bak").exists()

    # Fixed by hand: the banner goes, and the same save keeps the hand-written block.
    fixed = edited.replace(TUNNEL_LINE + ",\n", TUNNEL_LINE + "\n")
    path.write_text(fixed)
    expect(banner).to_be_hidden(timeout=15000)
    save_profile(page, "local")
    expect(status).to_have_text("saved local")
    saved = json.loads(path.read_text())
    assert saved["tunnels"] == json.loads("{" + TUNNEL_LINE + "}")
    assert saved["profiles"]["local"]["base_url"] == "http://127.0.0.1:11434/v1"
    assert saved["profiles"]["openai"] == SETTINGS["profiles"]["openai"]
    assert (svc.home / "settings.json.bak").read_bytes() == fixed.encode()
    assert (svc.home / "settings.json.bak").stat().st_mode & 0o777 == 0o600
    assert page.js_errors == []  # type: ignore[attr-defined]


def test_an_api_write_over_a_broken_file_answers_409_naming_where_it_breaks(
    svc: Daemon,
) -> None:
    path = svc.home / "settings.json"
    edited, line = hand_edit(path.read_text())
    path.write_text(edited)
    with httpx.Client(base_url=f"{svc.url}/api", headers=svc.owner_headers(), timeout=10) as api:
        for method, body in (("PATCH", {"workspaces": []}), ("PUT", SETTINGS)):
            answer = api.request(method, "/settings", json=body)
            assert answer.status_code == 409, answer.text
            refused = answer.json()["error"]
            assert refused["code"] == "settings_invalid"
            assert f"{path} line {line}, column 3" in refused["message"]
    assert path.read_bytes() == edited.encode()
