"""Markdown previews through a real svc: rendering, headers, images, refreshing, traversal."""

from __future__ import annotations

import http.client
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.browser_login import dashboard_url, lget, localhost_client
from harness.daemon import Daemon
from harness.workspaces import register

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "previews" / "markdown"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("md-ws") / "project"
    shutil.copytree(FIXTURE, root / "docs")
    (root / "top.png").write_bytes((FIXTURE / "img" / "dot.png").read_bytes())
    secret = root.parent / "secret.png"
    secret.write_bytes((FIXTURE / "img" / "dot.png").read_bytes())
    (root / "docs" / "outside.png").symlink_to(secret)
    (root.parent / "outside.md").write_text("# outside")
    (root / "docs" / "outside.md").symlink_to(root.parent / "outside.md")
    (root / "docs" / "sub").mkdir()
    (root / "docs" / "sub" / "more.md").write_text("# More docs\n\n![dot](../img/dot.png)\n")
    yield root


def publish(daemon: Daemon, workspace: Path, file: str) -> dict:
    register(daemon, workspace)
    response = httpx.post(
        f"{daemon.url}/api/previews",
        json={"file": file, "cwd": str(workspace)},
        headers=daemon.owner_headers(),
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


@pytest.fixture(scope="module")
def guide(daemon: Daemon, workspace: Path) -> dict:
    return publish(daemon, workspace, "docs/guide.md")


def raw_get(daemon: Daemon, path: str) -> int:
    """Sends the path byte for byte: no client-side `..` normalisation."""
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=10)
    conn.putrequest("GET", path, skip_accept_encoding=True)
    conn.putheader("Authorization", f"Bearer {daemon.owner_token}")
    conn.endheaders()
    status = conn.getresponse().status
    conn.close()
    return status


def test_the_page_renders_tables_highlighted_code_and_a_toc(daemon: Daemon, guide: dict) -> None:
    assert guide["owner_url"].endswith(f"/md-preview/{guide['slug']}")
    page = lget(guide["owner_url"], headers=daemon.owner_headers())
    assert page.status_code == 200
    assert "<table>" in page.text and 'class="codehilite"' in page.text
    assert '<nav class="toc">' in page.text and 'href="#table"' in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'nonce-" in csp
    assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    assert page.headers["referrer-policy"] == "no-referrer"
    assert "prefers-color-scheme: dark" in page.text


def test_relative_images_load_from_the_files_folder(daemon: Daemon, guide: dict) -> None:
    image = lget(f"{guide['owner_url']}/img/dot.png", headers=daemon.owner_headers())
    assert image.status_code == 200
    assert image.headers["content-type"] == "image/png"
    assert image.content.startswith(b"\x89PNG")


def test_every_request_renders_the_file_as_it_is_now(
    daemon: Daemon, workspace: Path, guide: dict
) -> None:
    version = lget(f"{guide['owner_url']}?version=1", headers=daemon.owner_headers()).json()
    note = workspace / "docs" / "guide.md"
    original = note.read_text()
    try:
        note.write_text(original + "\n\nfreshly added line\n")
        page = lget(guide["owner_url"], headers=daemon.owner_headers())
        assert "freshly added line" in page.text
        later = lget(f"{guide['owner_url']}?version=1", headers=daemon.owner_headers())
        assert later.json()["version"] != version["version"]
    finally:
        note.write_text(original)


@pytest.mark.parametrize(
    "rest",
    [
        "../top.png",
        "../../secret.png",
        "%2e%2e%2ftop.png",
        "%2e%2e/%2e%2e/secret.png",
        "..%2f..%2fsecret.png",
        "%2fetc%2fpasswd",
        "/etc/passwd",
        "outside.png",
        "img/..%5c..%5ctop.png",
    ],
)
def test_paths_out_of_the_folder_or_workspace_are_refused(
    daemon: Daemon, guide: dict, rest: str
) -> None:
    assert raw_get(daemon, f"/md-preview/{guide['slug']}/{rest}") == 404


def test_a_symlinked_markdown_file_pointing_outside_is_refused(
    daemon: Daemon, workspace: Path
) -> None:
    response = httpx.post(
        f"{daemon.url}/api/previews",
        json={"file": "docs/outside.md", "cwd": str(workspace)},
        headers=daemon.owner_headers(),
    )
    assert response.status_code == 400
    assert "outside" in response.json()["error"]["message"]


def test_the_owner_token_is_required(daemon: Daemon, guide: dict) -> None:
    browser = lget(guide["owner_url"], headers={"Accept": "text/html"})
    assert browser.status_code == 401 and "Log in to svc" in browser.text
    assert lget(f"{guide['owner_url']}/img/dot.png").status_code == 401


def test_a_token_in_the_url_becomes_a_browser_session_then_a_clean_url(
    daemon: Daemon, guide: dict
) -> None:
    with localhost_client(base_url=daemon.url) as browser:
        first = browser.get(f"/md-preview/{guide['slug']}?token={daemon.owner_token}")
        assert first.status_code == 303 and first.headers["location"].startswith("/login?")
        landed = browser.get(first.headers["location"], follow_redirects=True)
        assert landed.status_code == 200 and "<table>" in landed.text
        assert daemon.owner_token not in str(landed.url)
        assert str(landed.url).startswith(dashboard_url(daemon) + "/md-preview/")
        image = browser.get(f"{dashboard_url(daemon)}/md-preview/{guide['slug']}/img/dot.png")
        assert image.status_code == 200


def test_linked_markdown_files_in_the_workspace_render_too(daemon: Daemon, guide: dict) -> None:
    page = lget(f"{guide['owner_url']}/sub/more.md", headers=daemon.owner_headers())
    assert page.status_code == 200 and "More docs</h1>" in page.text
    assert f'<base href="/md-preview/{guide["slug"]}/sub/">' in page.text
    assert "script-src 'nonce-" in page.headers["content-security-policy"]
    version = lget(f"{guide['owner_url']}/sub/more.md?version=1", headers=daemon.owner_headers())
    assert version.json()["version"]
    assert raw_get(daemon, f"/md-preview/{guide['slug']}/outside.md") == 404


def test_a_file_too_costly_to_render_is_cut_off_and_the_daemon_stays_responsive(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    """Python-Markdown is quadratic on runs of `[`: the worker is stopped at the time limit."""
    fresh_daemon.env["SVC_MD_RENDER_SECONDS"] = "1"
    fresh_daemon.start()
    (tmp_path / "slow.md").write_text("[" * 30_000)
    (tmp_path / "fine.md").write_text("# Fine\n")
    slow = publish(fresh_daemon, tmp_path, "slow.md")
    fine = publish(fresh_daemon, tmp_path, "fine.md")
    page = lget(slow["owner_url"], headers=fresh_daemon.owner_headers(), timeout=30)
    assert page.status_code == 200
    assert "svc stopped rendering this file after 1 s" in page.text
    assert page.elapsed.total_seconds() < 10
    after = lget(fine["owner_url"], headers=fresh_daemon.owner_headers(), timeout=30)
    assert after.status_code == 200 and "Fine" in after.text


def test_a_huge_file_is_read_only_up_to_the_cap(daemon: Daemon, tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    with big.open("wb") as handle:
        handle.truncate(600 * 1024 * 1024)  # sparse: costs no disk
    made = publish(daemon, tmp_path, "big.md")
    pid = daemon.proc.pid
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    version = lget(
        made["owner_url"], params={"version": 1}, headers=daemon.owner_headers(), timeout=60
    )
    assert version.status_code == 200
    peak_kb = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmHWM:")
    )
    rss_kb = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    assert peak_kb - rss_kb < 100 * 1024  # far below the file's 600 MiB
