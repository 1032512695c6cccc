"""What a new user hit in the dashboard's settings (tracker: "What a new user hit"), in Debian's
Chromium against a real daemon:

- a profile whose `api_key_env` variable is unset said "Key: set (hidden)": /api/profiles and the
  profiles table now say which variable is missing (never a value);
- profiles could only be edited in settings.json: the dashboard adds and edits them through
  PATCH /api/settings, keeping unknown keys and stored secrets;
- agents and workspaces could only be edited in settings.json: the dashboard edits and adds
  agents through PUT /api/agents/{name} (an override entry for a built-in; the entry's unknown
  keys kept) and renames and removes workspaces (PATCH/DELETE /api/workspaces/{id});
- the integrations block repeated "not enabled" once per agent and part, and empty lists showed
  as empty sections: now one line names the agents that are not enabled, and an empty list says
  so in one short line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon, migrated_home
from harness.dashboard import show

MISSING = "SVC_TEST_UNSET_PROFILE_KEY"  # never set anywhere
PRESENT = "SVC_TEST_SET_PROFILE_KEY"
SECRET = "sk-literal-SECRET-123"
OFF = ("claude", "gemini", "opencode", "qwen")
SETTINGS: dict[str, Any] = {
    "future_feature": {"keep": True},
    "profiles": {
        "openai": {
            "provider": "openai-chat",
            "base_url": "https://api.openai.com/v1",
            "api_key_env": MISSING,
            "models": ["gpt-x"],
            "team_note": "an unknown key, kept",
        },
        "fromenv": {
            "provider": "anthropic",
            "base_url": "https://api.anthropic.com",
            "api_key_env": PRESENT,
        },
        "literal": {
            "provider": "gemini",
            "base_url": "https://generativelanguage.googleapis.com",
            "api_key": SECRET,
        },
    },
    "agents": {
        **{name: {"enabled": False} for name in OFF},
        "codex": {"enabled": True},  # installs into the test's own HOME
        "helper": {"command": ["sh"], "enabled": True, "team_note": "an unknown key, kept"},
    },
}


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("settings-dashboard")
    user_home = tmp / "user-home"
    user_home.mkdir()
    env = {
        "HOME": str(user_home),
        "CLAUDE_CONFIG_DIR": str(user_home / ".claude"),
        "CODEX_HOME": str(user_home / ".codex"),
        "GEMINI_CLI_HOME": str(user_home),
        "QWEN_HOME": str(user_home / ".qwen"),
        "XDG_CONFIG_HOME": str(user_home / ".config"),
        PRESENT: "sk-from-env-SECRET",
    }
    server = Daemon(migrated_home(tmp / "home", SETTINGS), env=env)
    server.env.pop(MISSING, None)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def page(browser: Browser, svc: Daemon) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{svc.url}/login?token={svc.owner_token}")
    expect(page.locator("h1")).to_have_text("svc")
    show(page, "settings")
    # The settings views fill once the agents, workspaces and profiles have come (a busy
    # machine: a first agent detection takes a while).
    expect(page.locator("#profiles tbody tr").first).to_be_attached(timeout=45000)
    yield page
    context.close()


def on_disk(svc: Daemon) -> dict[str, Any]:
    return json.loads((svc.home / "settings.json").read_text())


def test_api_profiles_say_which_variable_is_missing_never_a_value(svc: Daemon) -> None:
    with httpx.Client(base_url=f"{svc.url}/api", headers=svc.owner_headers(), timeout=10) as c:
        response = c.get("/profiles")
        rows = {p["id"]: p for p in response.json()}
        one = c.get("/profiles/openai").json()
    assert rows["openai"]["key"] == {"source": "env", "env": MISSING, "set": False}
    assert rows["openai"]["api_key"] is None  # not "[redacted]": there is no key
    assert one["key"] == rows["openai"]["key"]
    assert rows["fromenv"]["key"] == {"source": "env", "env": PRESENT, "set": True}
    assert rows["literal"]["key"] == {"source": "settings.json", "set": True}
    assert "SECRET" not in response.text


def test_the_profiles_table_says_which_variable_is_missing(page: Page) -> None:
    key = page.locator('#profiles tr[data-profile="openai"] td').nth(4)
    expect(key).to_have_text(f"missing: ${MISSING} is not set in svc's environment")
    expect(page.locator('#profiles tr[data-profile="fromenv"] td').nth(4)).to_have_text(
        f"from ${PRESENT} (set)"
    )
    expect(page.locator('#profiles tr[data-profile="literal"] td').nth(4)).to_have_text(
        "in settings.json (hidden)"
    )
    expect(page.locator("#profiles")).not_to_contain_text("SECRET")


def test_a_profile_is_added_and_edited_from_the_dashboard_keeping_unknown_keys(
    page: Page, svc: Daemon
) -> None:
    form = page.locator("#profile-form")
    form.locator("input[name=profile_id]").fill("local")
    form.locator("select[name=provider]").select_option("openai-responses")
    form.locator("input[name=base_url]").fill("http://127.0.0.1:11434/v1")
    form.locator("input[name=models]").fill("llama3, qwen2")
    form.locator("input[name=api_key_env]").fill("LOCAL_KEY")
    form.locator("button[type=submit]").click()
    expect(page.locator("#profile-status")).to_have_text("saved local")
    row = page.locator('#profiles tr[data-profile="local"]')
    expect(row).to_contain_text("openai-responses")
    expect(row).to_contain_text("llama3, qwen2")
    expect(row.locator("td").nth(4)).to_have_text(
        "missing: $LOCAL_KEY is not set in svc's environment"
    )
    stored = on_disk(svc)
    assert stored["profiles"]["local"] == {
        "provider": "openai-responses",
        "base_url": "http://127.0.0.1:11434/v1",
        "models": ["llama3", "qwen2"],
        "api_key_env": "LOCAL_KEY",
    }
    assert stored["future_feature"] == {"keep": True}  # unknown top-level keys kept
    assert stored["profiles"]["literal"]["api_key"] == SECRET  # redacted secrets kept
    assert stored["agents"] == SETTINGS["agents"]

    # Edit an existing profile: the form is filled from settings.json; its unknown key stays.
    page.locator('#profiles tr[data-profile="openai"] button', has_text="Edit").click()
    expect(form.locator("input[name=base_url]")).to_have_value("https://api.openai.com/v1")
    expect(form.locator("input[name=api_key_env]")).to_have_value(MISSING)
    form.locator("input[name=models]").fill("gpt-x, gpt-y")
    form.locator("button[type=submit]").click()
    expect(page.locator('#profiles tr[data-profile="openai"]')).to_contain_text("gpt-x, gpt-y")
    edited = on_disk(svc)["profiles"]["openai"]
    assert edited["models"] == ["gpt-x", "gpt-y"]
    assert edited["team_note"] == "an unknown key, kept"
    assert edited["api_key_env"] == MISSING and "api_key" not in edited

    # A refused edit says why, and settings.json is left as it was.
    form.locator("input[name=profile_id]").fill("broken")
    form.locator("input[name=base_url]").fill("ftp://nope")
    form.locator("button[type=submit]").click()
    expect(page.locator("#profile-status")).to_contain_text("base_url")
    assert "broken" not in on_disk(svc)["profiles"]


def test_agents_not_enabled_share_one_line_and_empty_lists_say_so(page: Page) -> None:
    box = page.locator("#integrations-box")
    expect(page.locator('#integrations tr[data-agent="codex"]')).to_contain_text(
        re.compile("written|up to date")
    )
    line = page.locator("#integrations-disabled")
    expect(line).to_be_visible()
    for name in OFF:
        expect(line).to_contain_text(name)
        expect(page.locator(f'#integrations tr[data-agent="{name}"]')).to_have_count(0)
    assert box.inner_text().count("not enabled") + box.inner_text().count("Not enabled") == 1
    expect(page.locator("#integrations-none")).to_be_hidden()
    # No workspace registered: one short line, not an empty list.
    expect(page.locator("#workspaces")).to_be_hidden()
    expect(page.locator("#settings-box .none-yet").first).to_have_text(
        "No workspaces yet: register a folder below."
    )


# --- agents and workspaces (these run last: they change the agents and register a folder) ----


def edit_agent(page: Page, name: str) -> None:
    """Edit, then wait for the form to hold the agent's entry (it loads it from svc)."""
    page.locator(f'#agents tr[data-agent="{name}"]').get_by_role(
        "button", name=f"Edit agent {name}"
    ).click()
    expect(page.locator("#agent-form")).not_to_have_attribute("aria-busy", "true")
    expect(page.locator("#agent-form input[name=agent_name]")).to_have_value(name)


def save_agent(page: Page, name: str) -> None:
    page.locator("#agent-form").get_by_role("button", name="Save agent").click()
    # A save says what its check found (issue 34): these agents' commands are all found.
    expect(page.locator("#agent-status")).to_have_text(
        re.compile(f"^saved {name}( — checked: .*)?$")
    )


def test_an_agent_is_edited_from_the_dashboard_keeping_unknown_keys(
    page: Page, svc: Daemon
) -> None:
    form = page.locator("#agent-form")
    row = page.locator('#agents tr[data-agent="helper"]')
    expect(row.locator("td").nth(2)).to_have_text("yes")
    expect(page.locator("#new-agent option[value=helper]")).to_have_count(1)

    # Disabled: gone from the new-session picker; settings.json keeps the entry's unknown key.
    edit_agent(page, "helper")
    expect(form.locator("input[name=command]")).to_have_value("sh")
    form.locator("select[name=enabled]").select_option("false")
    save_agent(page, "helper")
    expect(row.locator("td").nth(2)).to_have_text("no")
    expect(page.locator("#new-agent option[value=helper]")).to_have_count(0)
    assert on_disk(svc)["agents"]["helper"] == {
        "command": ["sh"],
        "enabled": False,
        "team_note": "an unknown key, kept",
    }

    # Enabled again with another command (a quoted word stays one argument) and a variable.
    edit_agent(page, "helper")
    expect(form.locator("select[name=enabled]")).to_have_value("false")
    form.locator("select[name=enabled]").select_option("true")
    form.locator("input[name=command]").fill("sh -c 'exec cat'")
    form.locator("textarea[name=env]").fill("HELPER_MODE=quiet")
    save_agent(page, "helper")
    expect(page.locator("#new-agent option[value=helper]")).to_have_count(1)
    assert on_disk(svc)["agents"]["helper"] == {
        "command": ["sh", "-c", "exec cat"],
        "enabled": True,
        "env": {"HELPER_MODE": "quiet"},
        "team_note": "an unknown key, kept",
    }
    form.get_by_role("button", name="New agent").click()
    edit_agent(page, "helper")
    expect(form.locator("input[name=command]")).to_have_value("sh -c 'exec cat'")
    # The value is a secret as far as any API knows (contract §1): the form shows the marker,
    # and saving it back unchanged keeps the stored value.
    expect(form.locator("textarea[name=env]")).to_have_value("HELPER_MODE=[redacted]")
    assert "quiet" not in page.content()
    save_agent(page, "helper")
    assert on_disk(svc)["agents"]["helper"]["env"] == {"HELPER_MODE": "quiet"}

    # A built-in: the edit writes an override entry; dropping it brings the defaults back.
    shell = page.locator('#agents tr[data-agent="shell"]')
    expect(shell.locator("td").nth(3)).to_have_text("builtin")
    edit_agent(page, "shell")
    expect(form.locator("input[name=command]")).to_have_attribute(
        "placeholder", re.compile("^built-in: ")
    )
    form.locator("select[name=enabled]").select_option("false")
    save_agent(page, "shell")
    expect(shell.locator("td").nth(3)).to_have_text("both")
    expect(page.locator("#new-agent option[value=shell]")).to_have_count(0)
    assert on_disk(svc)["agents"]["shell"] == {"enabled": False}
    form.get_by_role("button", name="Drop its settings.json entry").click()
    expect(page.locator("#agent-status")).to_have_text("dropped the entry of shell")
    expect(page.locator("#new-agent option[value=shell]")).to_have_count(1)
    stored = on_disk(svc)
    assert "shell" not in stored["agents"]
    assert stored["future_feature"] == {"keep": True}
    assert stored["profiles"]["literal"]["api_key"] == SECRET


def test_an_agent_added_from_the_form_is_offered_once_enabled(page: Page, svc: Daemon) -> None:
    form = page.locator("#agent-form")
    form.get_by_role("button", name="New agent").click()
    form.locator("input[name=agent_name]").fill("mini")
    form.locator("select[name=enabled]").select_option("false")
    form.locator("input[name=command]").fill("sh -c 'exec cat'")
    save_agent(page, "mini")
    row = page.locator('#agents tr[data-agent="mini"]')
    expect(row).to_contain_text("settings")
    expect(row.locator("td").nth(2)).to_have_text("no")
    expect(page.locator("#new-agent option[value=mini]")).to_have_count(0)
    assert on_disk(svc)["agents"]["mini"] == {"command": ["sh", "-c", "exec cat"], "enabled": False}

    edit_agent(page, "mini")
    expect(page.locator("#agent-status")).to_have_text("")  # the form is filled again
    form.locator("select[name=enabled]").select_option("true")
    save_agent(page, "mini")
    expect(page.locator("#new-agent option[value=mini]")).to_have_count(1)
    expect(row.locator("td").nth(2)).to_have_text("yes")

    # Refusals show next to the form; settings.json is left as it was.
    form.get_by_role("button", name="New agent").click()
    form.locator("input[name=agent_name]").fill("nocommand")
    form.get_by_role("button", name="Save agent").click()
    expect(page.locator("#agent-status")).to_contain_text("give it a command")
    form.locator("input[name=command]").fill("sh -c 'unclosed")
    form.get_by_role("button", name="Save agent").click()
    expect(page.locator("#agent-status")).to_have_text("command: a quote is not closed")
    form.locator("input[name=command]").fill("sh")
    form.locator("textarea[name=env]").fill("NOT A NAME=1")
    form.get_by_role("button", name="Save agent").click()
    expect(page.locator("#agent-status")).to_contain_text("not a variable name")
    assert "nocommand" not in on_disk(svc)["agents"]


def test_a_workspace_is_renamed_and_removed_from_the_dashboard(
    page: Page, svc: Daemon, tmp_path: Path
) -> None:
    folder = (tmp_path / "proj").resolve()
    folder.mkdir()
    page.fill("#register-workspace input[name=path]", str(folder))
    page.locator("#register-workspace").get_by_role("button", name="Register").click()
    item = page.locator(f'#workspaces li[data-workspace="{folder}"]')
    expect(item).to_contain_text(f"proj — {folder}")

    item.get_by_role("button", name="Rename workspace proj").click()
    item.locator("input[name=name]").fill("Renamed project")
    item.get_by_role("button", name="Save name").click()
    expect(item).to_contain_text(f"Renamed project — {folder}")
    expect(page.locator(f"#new-workspace option[value='{folder}']")).to_have_text(
        f"Renamed project — {folder}"
    )
    # The name is svc's own (its database); settings.json lists the folder by path.
    assert on_disk(svc)["workspaces"] == [str(folder)]
    with httpx.Client(base_url=f"{svc.url}/api", headers=svc.owner_headers(), timeout=10) as c:
        assert [w["name"] for w in c.get("/workspaces").json()] == ["Renamed project"]

    item.get_by_role("button", name="Remove workspace Renamed project").click()
    expect(item).to_have_count(0)
    expect(page.locator("#workspaces")).to_be_hidden()
    expect(page.locator(f"#new-workspace option[value='{folder}']")).to_have_count(0)
    assert on_disk(svc)["workspaces"] == []
    assert on_disk(svc)["future_feature"] == {"keep": True}
