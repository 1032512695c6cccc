"""Previews made and removed in the dashboard (issue 34, friction 5; contract §10 "Nothing by
hand"), in Chromium at desktop and phone sizes against a live daemon: a port where nothing
listens is made with a warning on screen, a Markdown file is picked from the workspace's list
(which names nothing outside it), Remove takes a preview away; a paired device gets 403
`main_port_only` for both (a preview exposes a port of this machine)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from harness.daemon import ROOT, Daemon, migrated_home
from harness.termclient import hosting_settings, shell_env
from harness.upstream import Upstream
from tests.e2e.test_remote_tunnel import Remote

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-previews-dashboard")
    work = tmp / "work"
    (work / "docs").mkdir(parents=True)
    (work / "README.md").write_text("# Read me\n\nThe workspace's own notes.\n")
    (work / "docs" / "guide.md").write_text("# Guide\n")
    (work / "node_modules").mkdir()
    (work / "node_modules" / "dep.md").write_text("# a dependency's\n")
    outside = tmp / "secret.md"
    outside.write_text("# not the workspace's\n")
    os.symlink(outside, work / "linked.md")  # a link out of the workspace: never listed
    settings = {**hosting_settings(), "workspaces": [str(work)]}
    server = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    server.work = work  # type: ignore[attr-defined]
    yield server
    server.stop()


def closed_port() -> int:
    """A port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def axe_serious(page) -> list[str]:  # type: ignore[no-untyped-def]
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run('#previews-box')).violations")
    return [v["id"] for v in found if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_preview_is_made_with_a_warning_and_removed_in_the_dashboard(
    browser: Browser, daemon: Daemon, size: str
) -> None:
    work: Path = daemon.work  # type: ignore[attr-defined]
    port = closed_port()
    page = browser.new_context(**VIEWPORTS[size]).new_page()
    try:
        page.goto(f"{daemon.url}/login?token={daemon.owner_token}")
        page.evaluate("location.hash = 'view=previews'")
        form = page.get_by_role("form", name="New preview")
        expect(form).to_be_visible()
        expect(form.locator("select[name=workspace]")).to_have_value(str(work))
        form.get_by_role("spinbutton", name="Port").fill(str(port))
        form.get_by_role("button", name="Create").click()
        warning = form.get_by_role("alert")
        expect(warning).to_contain_text(f"nothing listens on port {port}")
        card = page.locator("#previews li.card", has_text=f"port {port}")
        expect(card).to_have_count(1)

        # A Markdown file, picked from the workspace's own list.
        form.locator("select[name=kind]").select_option("file")
        files = form.locator("select[name=file] option")
        expect(files).to_have_text(["README.md", "docs/guide.md"])  # no link out, no dependency
        form.locator("select[name=file]").select_option("docs/guide.md")
        form.get_by_role("button", name="Create").click()
        expect(form.locator("[role=status]")).to_contain_text("Preview made")
        expect(warning).to_have_count(0)  # the old warning went with the next answer
        md = page.locator("#previews li.card", has_text="guide.md")
        expect(md).to_have_count(1)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert axe_serious(page) == []

        for gone in (card, md):
            gone.get_by_role("button", name="Remove").first.click()
            expect(gone).to_have_count(0)
        listed = httpx.get(f"{daemon.url}/api/previews", headers=daemon.owner_headers()).json()
        assert [p for p in listed if p["port"] == port or "guide" in (p["file"] or "")] == []
    finally:
        page.context.close()


def test_a_port_with_a_server_gets_no_warning_and_the_file_list_stays_in_the_workspace(
    daemon: Daemon, tmp_path: Path
) -> None:
    with Upstream() as upstream:
        made = httpx.post(
            f"{daemon.url}/api/previews",
            json={"port": upstream.port},
            headers=daemon.owner_headers(),
        )
        assert made.status_code in (200, 201), made.text
        assert "warning" not in made.json()
    listed = httpx.get(
        f"{daemon.url}/api/preview-files",
        params={"workspace": str(tmp_path)},  # a folder svc does not know
        headers=daemon.owner_headers(),
    )
    assert listed.status_code == 400, listed.text
    relative = httpx.get(
        f"{daemon.url}/api/preview-files",
        params={"workspace": "../"},
        headers=daemon.owner_headers(),
    )
    assert relative.status_code == 400, relative.text


def test_a_paired_device_may_not_make_or_remove_a_preview(daemon: Daemon) -> None:
    remote = Remote(daemon, daemon.auth()["remote_port"])
    mine = httpx.post(
        f"{daemon.url}/api/previews", json={"port": closed_port()}, headers=daemon.owner_headers()
    ).json()
    with remote.client() as client:
        paired = remote.pair(client)
        headers = {"X-Svc-Page-Key": paired["page_key"], "Content-Type": "application/json"}
        for answer in (
            client.post("/api/previews", headers=headers, json={"port": closed_port()}),
            client.delete(f"/api/previews/{mine['slug']}", headers=headers),
        ):
            assert answer.status_code == 403, answer.text
            assert answer.json()["error"]["code"] == "main_port_only"
        assert client.get("/api/previews", headers=headers).status_code == 200  # reading is fine
    still = httpx.get(f"{daemon.url}/api/previews/{mine['slug']}", headers=daemon.owner_headers())
    assert still.status_code == 200
