"""Diff review in the dashboard (contract §10) in Debian's Chromium, against a live daemon and real
git: a parallel subagent turn in which the scripted agent commits files; the page shows each
subagent's files with the counts `git diff --numstat` gives; a line comment reaches the agent as a
prompt naming `file:line`; Merge fast-forwards, then makes a merge commit once the base moved on;
a conflicting merge names the files and leaves `git status` and the base branch as they were;
Discard removes the worktree and the branch. Everything here goes through the page."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon
from harness.git import feature_repo, git
from harness.mcp import tool
from harness.termclient import Chat, create_session, start_hosting_daemon, stop_session
from tests.e2e.test_dashboard import screenshot, serious_violations

TASKS = {  # subagent → what the scripted agent does (commit <file> <lines>)
    "ff": "commit ff.py 3",
    "mc": "commit mc.txt 4",
    "cf": "commit README.md 2",  # rewrites a file the base branch will change too
    "dc": "commit dc.txt 5",
}


def run(coroutine: Any) -> Any:
    """An MCP or WebSocket call from a sync test: Playwright's own loop runs on this thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-diff-review"))
    yield server
    server.stop()


@pytest.fixture
def page(browser: Browser, host: Daemon) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.viewport_name = "desktop"  # type: ignore[attr-defined]
    page.goto(f"{host.url}/login?token={host.owner_token}")
    expect(page.locator("h1")).to_have_text("svc")
    yield page
    context.close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A clean repository whose HEAD is a feature branch one commit ahead of main."""
    return feature_repo(tmp_path / "repo")


def page_counts(page: Page) -> list[tuple[str, str, str]]:
    """The file list as the page shows it, as numstat rows (added, removed, path)."""
    rows = page.locator("#diff nav.diff-files li")
    found = []
    for i in range(rows.count()):
        row = rows.nth(i)
        added = row.locator(".diff-ins").inner_text().removeprefix("+")
        removed = row.locator(".diff-del").inner_text().removeprefix("\u2212")
        found.append((added, removed, row.get_attribute("data-path") or ""))
    return sorted(found)


def numstat(cwd: Path | str, *revs: str) -> list[tuple[str, str, str]]:
    out = git(cwd, "diff", "--no-renames", "--numstat", *revs)
    return sorted(tuple(line.split("\t")) for line in out.splitlines())  # type: ignore[misc]


def review(page: Page, subagent: dict[str, Any]) -> None:
    page.evaluate(f"location.hash = '#view=diff&of=subagents/{subagent['id']}'")
    expect(page.locator("#diff .diff-branch")).to_have_text(subagent["changes"]["branch"])


async def agent_received(host: Daemon, session_id: str, needle: str) -> list[str]:
    """The prompts the agent of `session_id` received (the scripted agent's own record), once
    the turn of the one containing `needle` has ended."""
    chat = await Chat.connect(host)
    try:
        await chat.send(type="open", session_id=session_id)
        while True:
            said = await chat.next("user_message_chunk", timeout=20)
            if needle in said["text"]:
                break
        await chat.next("turn_end", timeout=20)
        await chat.send(type="prompt", session_id=session_id, text="prompts")
        await chat.next("user_message_chunk", text="prompts")
        answer = await chat.next("agent_message_chunk")
        await chat.next("turn_end")
        return json.loads(answer["text"])
    finally:
        await chat.close()


def test_review_comment_merge_conflict_and_discard_in_the_page(
    page: Page, host: Daemon, repo: Path
) -> None:
    agents = [{"name": name, "agent": "fake", "task": task} for name, task in TASKS.items()]
    made = run(tool(host, "initialize_subagents", mode="parallel", cwd=str(repo), agents=agents))
    done = run(tool(host, "wait_for_subagents", turn_id=made["turn_id"], timeout_s=120))
    assert done["completed"] and [r["status"] for r in done["reports"]] == ["done"] * 4, done
    by_name = {r["name"]: r for r in done["reports"]}
    base = httpx.get(
        f"{host.url}/api/subagent-turns/{made['turn_id']}", headers=host.owner_headers()
    ).json()["base_commit"]

    # The turn's row offers the review; it opens the diff view by the subagent's id.
    page.evaluate("location.hash = '#view=turns'")
    row = page.locator(f"article[data-turn='{made['turn_id']}'] tr[data-subagent=ff]")
    row.get_by_role("button", name="Review changes of ff").click()
    assert page.evaluate("location.hash") == f"#view=diff&of=subagents/{by_name['ff']['id']}"
    expect(page.locator("#diff .diff-branch")).to_have_text(by_name["ff"]["changes"]["branch"])
    expect(page.locator("#diff .diff-base")).to_have_text(base[:12])

    # Each subagent's files and counts are git's own.
    for name in TASKS:
        review(page, by_name[name])
        branch = by_name[name]["changes"]["branch"]
        expect(page.locator("#diff nav.diff-files li")).to_have_count(1)
        assert page_counts(page) == numstat(repo, base, branch), name
        print(f"{name}: page {page_counts(page)}")
    assert page_counts(page) == [("5", "0", "dc.txt")]

    # Hunks with line numbers and a +/− gutter; highlight.js coloured the Python file.
    review(page, by_name["ff"])
    added = page.locator("#diff article[data-path='ff.py'] tr.diff-add")
    expect(added).to_have_count(3)
    expect(added.nth(1).locator(".diff-mark")).to_have_text("+")
    expect(added.nth(1).locator(".diff-code")).to_have_text("line 1 of ff.py")
    number = added.nth(1).locator(".diff-code.hljs span.hljs-number")  # highlight.js, as Python
    expect(number).to_have_text("1")
    toggle = page.get_by_role("button", name="ff.py", exact=True)
    toggle.click()  # collapses the file
    expect(added.first).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(added.first).to_be_visible()
    assert serious_violations(page) == []

    # The same changes through the subagent's session, as a session's "Changes" opens them.
    page.evaluate(f"location.hash = '#view=diff&of=sessions/{by_name['ff']['session_id']}'")
    expect(page.locator("#diff .diff-meta")).to_contain_text("Session")
    expect(page.locator("#diff .diff-branch")).to_have_text(by_name["ff"]["changes"]["branch"])
    assert page_counts(page) == [("3", "0", "ff.py")]
    # On a phone the diff scrolls in its own box; the page never scrolls sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    expect(added.first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.set_viewport_size({"width": 1280, "height": 900})
    review(page, by_name["ff"])

    # A line comment, sent to the agent as one prompt naming file:line.
    page.get_by_role("button", name="Comment on ff.py:2").click()
    page.get_by_role("textbox", name="Your comment on ff.py:2").fill("rename this line")
    page.get_by_role("button", name="Add comment").click()
    expect(page.locator("#diff .diff-pending li")).to_contain_text("ff.py:2 rename this line")
    expect(page.locator("#diff tr.diff-pending-row")).to_contain_text("rename this line")
    screenshot(page, "diff-review")  # test-artifacts/diff-review-desktop.png
    page.get_by_role("button", name="Send 1 comment to the agent").click()
    expect(page.locator("#diff .diff-notice")).to_contain_text("1 comment sent to the agent")
    prompts = run(agent_received(host, by_name["ff"]["session_id"], "ff.py:2"))
    assert "1. ff.py:2\n   > +line 1 of ff.py\n   rename this line" in prompts[0], prompts
    print(f"the agent received: {prompts[0]!r}")

    # Merge: a fast-forward of the branch the worktrees came from.
    tip = git(repo, "rev-parse", by_name["ff"]["changes"]["branch"]).strip()
    page.get_by_role("button", name="Merge", exact=True).click()
    expect(page.locator("#diff .diff-notice")).to_contain_text(
        f"feature fast-forwarded to {tip[:12]}"
    )
    assert git(repo, "rev-parse", "feature").strip() == tip and (repo / "ff.py").exists()

    # The base moved on: the next one becomes a merge commit.
    review(page, by_name["mc"])
    before = git(repo, "rev-parse", "feature").strip()
    page.get_by_role("button", name="Merge", exact=True).click()
    expect(page.locator("#diff .diff-notice")).to_contain_text("merge commit")
    parents = git(repo, "rev-list", "--parents", "-n1", "feature").split()[1:]
    mc_tip = git(repo, "rev-parse", by_name["mc"]["changes"]["branch"]).strip()
    assert parents == [before, mc_tip]
    merged = git(repo, "rev-parse", "feature").strip()
    expect(page.locator("#diff .diff-notice")).to_contain_text(merged[:12])

    # A conflict: named, and nothing moves.
    (repo / "README.md").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    review(page, by_name["cf"])
    head, status = git(repo, "rev-parse", "feature").strip(), git(repo, "status", "--porcelain")
    page.get_by_role("button", name="Merge", exact=True).click()
    alert = page.locator("#diff .diff-conflict")
    expect(alert).to_contain_text("The base branch was left unchanged")
    expect(alert.locator("li")).to_have_text(["README.md"])
    assert git(repo, "rev-parse", "feature").strip() == head
    assert git(repo, "status", "--porcelain") == status == ""
    assert (repo / "README.md").read_text() == "ours\n"

    # Discard, after a confirmation: the worktree and the branch are gone.
    review(page, by_name["dc"])
    worktree, branch = (
        Path(by_name["dc"]["changes"]["worktree"]),
        by_name["dc"]["changes"]["branch"],
    )
    page.get_by_role("button", name="Discard…").click()
    assert worktree.exists()  # not before it is confirmed
    page.get_by_role("button", name="Discard worktree and branch").click()
    expect(page.locator("#diff .diff-notice")).to_contain_text(
        f"Discarded: the worktree and branch {branch}"
    )
    expect(page.locator("#diff .diff-error")).to_contain_text("are gone")  # the view refreshed
    assert not worktree.exists() and git(repo, "branch", "--list", branch) == ""
    assert str(worktree) not in git(repo, "worktree", "list")


def test_a_plain_shells_changes_offer_no_comment_box(page: Page, host: Daemon, repo: Path) -> None:
    """svc refuses diff comments for a plain shell (it would run the quoted lines): the page
    says so, instead of offering a comment box whose comments would fail."""
    (repo / "notes.txt").write_text("$(touch svc-should-never-run)\n")
    session = create_session(host, repo)  # the built-in `shell` agent's terminal
    try:
        page.evaluate(f"location.hash = '#view=diff&of=sessions/{session['id']}'")
        expect(page.locator("#diff .diff-no-comments")).to_contain_text("Comments go to agents")
        expect(page.locator("#diff nav.diff-files li")).to_have_count(1)
        expect(page.get_by_role("button", name="Comment on notes.txt:1")).to_have_count(0)
        expect(page.locator("#diff .diff-pending")).to_have_count(0)
        assert serious_violations(page) == []
    finally:
        stop_session(host, session["id"])
