"""One view in the dashboard (contract §18, issue 35 acceptance 3), in Debian's Chromium against
three members on this machine (one real PostgreSQL database, a Redis of this module's own): the
machines view shows a, b and c online at a desktop and a phone size; a shell started on c from
a's new-session form opens from a's sidebar (desktop) or sessions list (phone), is typed into and
really runs on c; a chat on b started from a's form answers and takes a permission answer; the
sessions table has a machine column and filter; with c away its card, its session in the sidebar
and its open pane read unreachable (nothing offers Stop), and once c is back the same terminal is
typed into; Stop all on a stops the sessions of a, b and c; with Redis gone a's dashboard says the
fleet is unreachable, and stops saying so once it is back. Every page is axe-clean (no serious or
critical violation)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from harness.dashboard import session_action, show
from harness.fleet import Fleet, api, hosting_fleet, wait_for, workspace_of
from harness.own_redis import OwnRedis
from tests.e2e.test_approvals_browser import PHONE, serious_violations

ACTIVE = "#session-panel .session-view.active"
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
SIZES = {"desktop": DESKTOP, "phone": PHONE}


@pytest.fixture(scope="module")
def redis() -> Iterator[OwnRedis]:
    server = OwnRedis().start()
    yield server
    server.kill()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, redis: OwnRedis) -> Iterator[Fleet]:
    with hosting_fleet(tmp_path_factory.mktemp("fleet-dashboard"), redis=redis.env()) as running:
        for member in running.members.values():
            # Each member's row names its workspace (the form offers another machine's from it).
            wait_for(
                lambda m=member: api(m.daemon, "GET", f"/api/machines/{m.name}").json(),
                lambda row: row["workspaces"],
            )
        yield running


def open_page(browser: Browser, fleet: Fleet, size: str) -> Page:
    """a's dashboard, once it knows the fleet's three machines."""
    a = fleet.daemon("a")
    page = browser.new_context(**SIZES[size]).new_page()  # type: ignore[arg-type]
    page.goto(f"{a.url}/login?token={a.owner_token}")
    expect(page.locator("#new-machine option")).to_have_count(3)
    return page


def start_on(page: Page, fleet: Fleet, machine: str, agent: str, kind: str) -> str:
    """A session started from the form on `machine`; its tab opens. Returns its id."""
    show(page, "sessions")
    page.select_option("#new-machine", fleet.members[machine].machine_id)
    workspace = workspace_of(fleet, machine)
    expect(page.locator(f"#new-workspace option[value='{workspace}']")).to_have_count(1)
    page.select_option("#new-agent", agent)
    page.select_option("#new-workspace", workspace)
    page.select_option("#new-kind", kind)
    page.click("#new-session button[type=submit]")
    expect(page.locator(f"{ACTIVE} .session-machine")).to_have_text(f"on {machine}")
    sid = page.locator(ACTIVE).get_attribute("data-session-id")
    assert sid
    return sid


def stop(fleet: Fleet, sid: str) -> None:
    api(fleet.daemon("a"), "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})


@pytest.mark.parametrize("size", list(SIZES))
def test_the_machines_view_shows_a_b_and_c_online(
    browser: Browser, fleet: Fleet, size: str
) -> None:
    page = open_page(browser, fleet, size)
    try:
        show(page, "machines")
        cards = page.locator("#machines li.machine")
        expect(cards).to_have_count(3)
        for name in "abc":
            card = page.locator(f"#machines li[data-name='{name}']")
            expect(card).to_have_attribute("data-status", "online")
            expect(card.locator(".machine-status")).to_contain_text("online")  # in words too
            expect(card.locator(".machine-agents")).to_contain_text("shell")
            expect(card.locator(".machine-sessions")).to_have_text(re.compile(r"^\d+$"))
            expect(card.locator(".machine-workspaces")).to_contain_text(workspace_of(fleet, name))
            expect(card.locator(".machine-self")).to_have_count(1 if name == "a" else 0)
        expect(page.locator("#machines li[data-name='a'] .machine-self")).to_have_text(
            "this machine"
        )
        wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"the machines view scrolls sideways by {wide}px"
        assert serious_violations(page) == []
    finally:
        page.context.close()


@pytest.mark.parametrize("size", list(SIZES))
def test_a_shell_started_on_c_from_a_opens_types_and_runs_on_c(
    browser: Browser, fleet: Fleet, size: str
) -> None:
    page = open_page(browser, fleet, size)
    sid = ""
    try:
        sid = start_on(page, fleet, "c", "shell", "terminal")
        # The tab the form opened at once takes keys (its owner is known right after the 201).
        expect(page.locator(f"{ACTIVE} .xterm-helper-textarea")).to_be_focused()
        page.keyboard.type("echo form-$((1+1))")
        page.keyboard.press("Enter")
        expect(page.locator(f"{ACTIVE} .xterm-rows")).to_contain_text("form-2")
        session_action(page, "Close")
        expect(page.locator("#session-panel .session-view")).to_have_count(0)

        if size == "desktop":  # from the sidebar, where it says which machine it runs on
            item = page.locator(f"#sidebar-tree li[data-session-id='{sid}']")
            expect(item.locator(".side-machine")).to_have_text("on c")
            mine = page.locator(f"li[data-session-id='{sid}']")
            group = page.locator("#sidebar-tree details", has=mine)
            expect(group.locator("summary .side-machine")).to_have_text("on c")
            item.locator("a").click()
        else:  # from the sessions list, its card naming the machine
            show(page, "sessions")
            row = page.locator(f"#sessions tr[data-session-id='{sid}']")
            expect(row.locator("td.machine")).to_have_text("c")
            row.get_by_role("button", name="Open terminal").click()
        expect(page.locator(ACTIVE)).to_have_attribute("data-session-id", sid)
        expect(page.locator(f"{ACTIVE} .xterm-helper-textarea")).to_be_focused()

        screen = page.locator(f"{ACTIVE} .xterm-rows")
        page.keyboard.type("echo fleet-$((6*7))")
        page.keyboard.press("Enter")
        expect(screen).to_contain_text("fleet-42")
        page.keyboard.type("echo home=$HOME")
        page.keyboard.press("Enter")
        expect(screen).to_contain_text(f"home={fleet.members['c'].home.parent / 'home'}")
        # c hosts it: its own API has the row, running.
        assert api(fleet.daemon("c"), "GET", f"/api/sessions/{sid}").json()["status"] == "running"
        assert serious_violations(page) == []
    finally:
        page.context.close()
        if sid:
            stop(fleet, sid)


def test_a_chat_on_b_started_from_a_answers_and_takes_a_permission_answer(
    browser: Browser, fleet: Fleet
) -> None:
    page = open_page(browser, fleet, "desktop")
    sid = ""
    try:
        sid = start_on(page, fleet, "b", "fake", "chat")
        assert api(fleet.daemon("b"), "GET", f"/api/sessions/{sid}").status_code == 200
        box = page.locator(f"{ACTIVE} .chat-input textarea")
        box.fill("echo hello from b")
        box.press("Enter")
        expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text("hello from b")

        box.fill("permission")
        box.press("Enter")
        page.locator(f"{ACTIVE} .chat-permission button:text('Allow once')").click()
        expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text("permission: allow")
        expect(page.locator(f"{ACTIVE} .chat-decision")).to_contain_text("Allow once")

        # Hand over: b issues the code (its chat log shows it too); a picks it up from b.
        page.locator(f"{ACTIVE} .session-head button", has_text="Hand over").click()
        status = page.locator(f"{ACTIVE} .session-head [role=status]")
        expect(status).to_contain_text("Handover code")
        code = re.search(r"Handover code ([A-Z2-9]{4}):", status.inner_text())
        assert code, status.inner_text()
        expect(page.locator(f"{ACTIVE} .chat-log")).to_contain_text(f"Handover code {code[1]}")
        picked = api(fleet.daemon("a"), "POST", "/api/handover/pickup", json={"code": code[1]})
        assert (picked.json()["id"], picked.json()["machine_name"]) == (sid, "b"), picked.text
        assert serious_violations(page) == []
    finally:
        page.context.close()
        if sid:
            stop(fleet, sid)


def test_the_sessions_table_has_a_machine_column_and_filter(browser: Browser, fleet: Fleet) -> None:
    a = fleet.daemon("a")
    made = {
        name: api(
            a,
            "POST",
            "/api/sessions",
            json={"machine": name, "agent": "shell", "workspace": workspace_of(fleet, name)},
        ).json()["id"]
        for name in "abc"
    }
    page = open_page(browser, fleet, "desktop")
    try:
        show(page, "sessions")
        table = page.locator("#sessions")
        expect(table.locator("thead th", has_text="Machine")).to_have_count(1)
        for name, sid in made.items():
            expect(table.locator(f"tr[data-session-id='{sid}'] td.machine")).to_have_text(name)

        b_id = fleet.members["b"].machine_id
        page.select_option("#sessions-machine", b_id)
        expect(table.locator(f"tr[data-session-id='{made['b']}']")).to_have_count(1)
        for name in "ac":
            expect(table.locator(f"tr[data-session-id='{made[name]}']")).to_have_count(0)
        rows = table.locator("tbody tr")
        assert rows.count() >= 1
        for n in range(rows.count()):
            assert rows.nth(n).get_attribute("data-machine") == b_id
        assert serious_violations(page) == []

        page.select_option("#sessions-machine", "")
        for sid in made.values():
            expect(table.locator(f"tr[data-session-id='{sid}']")).to_have_count(1)
    finally:
        page.context.close()
        for sid in made.values():
            stop(fleet, sid)


def test_stop_all_on_a_stops_the_sessions_of_every_machine(browser: Browser, fleet: Fleet) -> None:
    """Issue 42, path 4: the button counted and stopped a's sessions alone ("on this machine")
    while the README promises every session."""
    a = fleet.daemon("a")
    made = {
        name: api(
            a,
            "POST",
            "/api/sessions",
            json={"machine": name, "agent": "shell", "workspace": workspace_of(fleet, name)},
        ).json()["id"]
        for name in "abc"
    }
    page = open_page(browser, fleet, "desktop")
    try:
        show(page, "sessions")
        button = page.locator("#stop-all")
        expect(button).to_have_text("Stop all (3)")
        asked: list[str] = []
        page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
        button.click()
        expect(page.locator("#sessions-status")).to_have_text("stopped 3 sessions (a 1, b 1, c 1)")
        assert asked[0].startswith("Stop all 3 live sessions on every machine?"), asked
        for name, sid in made.items():
            row = api(fleet.daemon(name), "GET", f"/api/sessions/{sid}").json()
            assert (row["status"], row["end_reason"]) == ("exited", "stopped"), row
        expect(button).to_be_disabled()
    finally:
        page.context.close()


def test_a_member_away_reads_unreachable_and_its_terminal_comes_back(
    browser: Browser, fleet: Fleet
) -> None:
    """c stops (in order, its sessions kept by their holders: it reads unreachable at a's next
    look rather than 15 s on; test_fleet_machines.py times a SIGKILL): a's machines view, sidebar
    and open pane say so (nothing offers Stop or Hand over), then c starts again and the same
    terminal is typed into from a."""
    a = fleet.daemon("a")
    made = api(
        a,
        "POST",
        "/api/sessions",
        json={"machine": "c", "agent": "shell", "workspace": workspace_of(fleet, "c")},
    )
    sid = made.json()["id"]
    page = open_page(browser, fleet, "desktop")
    try:
        page.goto(f"{a.url}/#session={sid}")
        head = page.locator(f"{ACTIVE} .session-head")
        expect(head.locator("button", has_text="Hand over")).to_have_count(1)
        show(page, "machines")
        card = page.locator("#machines li[data-name='c']")
        expect(card).to_have_attribute("data-status", "online")
        fleet.daemon("c").stop(keep_sessions=True)
        expect(card).to_have_attribute("data-status", "unreachable", timeout=25_000)
        expect(card.locator(".machine-status")).to_have_text("○ unreachable")
        expect(card.locator(".machine-away")).to_contain_text("its sessions read unreachable")
        item = page.locator(f"#sidebar-tree li[data-session-id='{sid}']")
        expect(item).to_have_class(re.compile(r"\bstatus-unreachable\b"))
        expect(item.locator(".side-resume")).to_have_count(0)
        assert serious_violations(page) == []
        item.locator("a").click()
        expect(head.locator(".session-machine")).to_have_text("on c · unreachable")
        acts = head.locator("button", has_text=re.compile("Stop|Hand over|Resume"))
        expect(acts).to_have_count(0)
        assert serious_violations(page) == []

        fleet.start("c")
        expect(head.locator(".session-machine")).to_have_text("on c", timeout=25_000)
        expect(card).to_have_attribute("data-status", "online")
        page.reload()  # the pane's socket closed with c: a fresh page opens it again
        expect(page.locator(ACTIVE)).to_have_attribute("data-session-id", sid)
        expect(page.locator(f"{ACTIVE} .xterm-helper-textarea")).to_be_focused()
        page.keyboard.type("echo back-$((40+2))")
        page.keyboard.press("Enter")
        expect(page.locator(f"{ACTIVE} .xterm-rows")).to_contain_text("back-42")
    finally:
        page.context.close()
        if fleet.daemon("c").proc is None or fleet.daemon("c").proc.poll() is not None:
            fleet.start("c")
        stop(fleet, sid)


def test_with_redis_gone_the_dashboard_says_the_fleet_is_unreachable(
    browser: Browser, fleet: Fleet, redis: OwnRedis
) -> None:
    """Last in the module: Redis is killed and started again."""
    page = open_page(browser, fleet, "desktop")
    banner = page.locator("#fleet-problem")
    try:
        expect(banner).to_be_hidden()
        redis.kill()
        expect(banner).to_be_visible(timeout=20_000)
        expect(banner).to_contain_text("The fleet is unreachable (")
        expect(banner).to_contain_text(
            "this machine's sessions go on; others' come back when it rejoins."
        )
        assert serious_violations(page) == []
        redis.start()
        expect(banner).to_be_hidden(timeout=20_000)
    finally:
        if redis.server is None:
            redis.start()
        page.context.close()
