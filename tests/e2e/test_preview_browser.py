"""Previews in headless Chromium: the owner's live preview on its own origin, what its scripts can
reach, and the Markdown preview (images, hostile markup, refresh, colour schemes).

One browser for the module; a fresh context (no cookies) per test.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page

from harness.browser_login import dashboard_url
from harness.daemon import Daemon
from harness.workspaces import register

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "previews"


@pytest.fixture
def context(browser: Browser, daemon: Daemon) -> Iterator[BrowserContext]:
    """A browser in which the owner has logged in to svc (a session on the dashboard host)."""
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")
    page.close()
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def md_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("md-browser") / "ws"
    shutil.copytree(FIXTURES / "markdown", root)
    return root


def md_preview(daemon: Daemon, workspace: Path, name: str) -> dict:
    register(daemon, workspace)
    return httpx.post(
        f"{daemon.url}/api/previews",
        json={"file": name, "cwd": str(workspace)},
        headers=daemon.owner_headers(),
    ).json()


def open_preview(context: BrowserContext, daemon: Daemon, slug: str) -> Page:
    page = context.new_page()
    page.goto(f"{dashboard_url(daemon)}/preview/u/{slug}/")
    assert page.url == f"http://{slug}.localhost:{daemon.port}/"
    return page


def test_a_static_site_with_root_relative_assets_renders_completely(
    context: BrowserContext, daemon: Daemon, site: dict
) -> None:
    page = open_preview(context, daemon, site["slug"])
    page.wait_for_function("document.getElementById('status').textContent === 'script ran'")
    color = page.eval_on_selector("#headline", "e => getComputedStyle(e).color")
    assert color == "rgb(12, 34, 56)"  # /style.css applied


def test_the_previewed_page_gets_nothing_from_svc(
    context: BrowserContext, daemon: Daemon, site: dict
) -> None:
    page = open_preview(context, daemon, site["slug"])
    # Root-relative /api/sessions and /ws/sessions reach the dev server, not svc.
    page.wait_for_function("document.getElementById('probe-api').textContent !== 'pending'")
    page.wait_for_function("document.getElementById('probe-ws').textContent !== 'pending'")
    api = page.inner_text("#probe-api")
    assert api.startswith("404") and '"agent"' not in api
    ws = page.inner_text("#probe-ws")
    assert ws.startswith(("closed", "error")) and "[" not in ws
    # Aimed at svc's own origin, with the owner logged in there: CORS and the Origin check hold.
    results = page.evaluate(
        """async (base) => {
        const out = {};
        for (const host of [base, base.replace('127.0.0.1', 'localhost')]) {
            try {
                const r = await fetch(host + '/api/sessions', {credentials: 'include'});
                out[host] = 'read ' + r.status + ' ' + (await r.text());
            } catch (e) { out[host] = 'blocked'; }
        }
        out.ws = await new Promise((resolve) => {
            const ws = new WebSocket(base.replace('http', 'ws') + '/ws/sessions');
            let data = '';
            ws.onmessage = (m) => { data += m.data; };
            ws.onclose = () => resolve('closed ' + data);
        });
        out.cookie = document.cookie;
        return out;
    }""",
        daemon.url,
    )
    assert results[daemon.url] == "blocked"
    assert results[daemon.url.replace("127.0.0.1", "localhost")] == "blocked"
    assert results["ws"] == "closed "
    assert results["cookie"] == ""  # svc_preview is HttpOnly, svc_token never comes here


def test_markdown_with_a_table_code_and_a_relative_image_renders(
    context: BrowserContext, daemon: Daemon, md_workspace: Path
) -> None:
    made = md_preview(daemon, md_workspace, "guide.md")
    page = context.new_page()
    page.goto(made["owner_url"])
    assert page.locator("table td").first.inner_text() == "vite"
    assert page.locator(".codehilite span.k").first.inner_text() == "def"
    page.wait_for_load_state("load")
    assert page.eval_on_selector("img", "i => i.complete && i.naturalWidth") == 8


def test_the_xss_corpus_is_inert(
    context: BrowserContext, daemon: Daemon, md_workspace: Path
) -> None:
    made = md_preview(daemon, md_workspace, "xss.md")
    page = context.new_page()
    dialogs: list[str] = []
    errors: list[str] = []
    console: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: console.append(m.text))
    page.goto(made["owner_url"])
    page.wait_for_selector("#last")
    for link in page.locator("a").all():
        link.click(modifiers=["Control"], no_wait_after=True, timeout=2000)
    page.wait_for_timeout(300)  # give any handler a chance to fire; none may
    assert dialogs == [] and errors == []
    assert not [c for c in console if "alert" in c or "Refused to execute" in c]
    assert page.eval_on_selector("h1", "e => getComputedStyle(e).color") != "rgb(255, 0, 0)"
    assert page.evaluate("document.querySelectorAll('script').length") == 1  # svc's own poller


def test_markdown_refreshes_itself_when_the_file_changes(
    context: BrowserContext, daemon: Daemon, md_workspace: Path
) -> None:
    note = md_workspace / "changing.md"
    note.write_text("# Before\n")
    made = md_preview(daemon, md_workspace, "changing.md")
    page = context.new_page()
    page.goto(made["owner_url"])
    assert page.inner_text("h1") == "Before"
    note.write_text("# After\n")
    # A locator, not wait_for_function: the page's CSP (rightly) forbids the eval that needs.
    page.locator("h1", has_text="After").wait_for(timeout=10000)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_markdown_is_readable_in_both_colour_schemes(
    browser: Browser, daemon: Daemon, md_workspace: Path, scheme: str
) -> None:
    made = md_preview(daemon, md_workspace, "guide.md")
    ctx = browser.new_context(color_scheme=scheme, extra_http_headers=daemon.owner_headers())
    page = ctx.new_page()
    page.goto(made["owner_url"])
    ratio = page.evaluate(CONTRAST_JS)
    ctx.close()
    assert ratio["text"] >= 7 and ratio["code"] >= 4.5, ratio
    assert ratio["dark_background"] == (scheme == "dark")


CONTRAST_JS = """() => {
    const rgb = (s) => s.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
    const lum = (c) => { const [r, g, b] = c.map((v) => { v /= 255;
        return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
    const contrast = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
        return (x + 0.05) / (y + 0.05); };
    const bg = rgb(getComputedStyle(document.documentElement).backgroundColor);
    const text = rgb(getComputedStyle(document.querySelector('p')).color);
    const code = document.querySelector('.codehilite');
    const kw = rgb(getComputedStyle(code.querySelector('.k')).color);
    const codeBg = rgb(getComputedStyle(code).backgroundColor);
    return {text: contrast(text, bg), code: contrast(kw, codeBg), dark_background: lum(bg) < 0.2};
}"""


def test_a_vite_dev_server_hot_reloads_through_the_preview(
    context: BrowserContext, daemon: Daemon, vite: tuple[int, Path]
) -> None:
    port, app = vite
    made = httpx.post(
        f"{daemon.url}/api/previews",
        json={"port": port, "workspace": str(app)},
        headers=daemon.owner_headers(),
    ).json()
    page = context.new_page()
    sockets: list[str] = []
    frames: list[str] = []
    page.on(
        "websocket",
        lambda ws: (sockets.append(ws.url), ws.on("framereceived", lambda f: frames.append(f))),
    )
    page.goto(made["owner_url"])
    page.locator("#message", has_text="hello from vite").wait_for(timeout=15000)
    deadline = time.monotonic() + 15
    while not any('"connected"' in str(f) for f in frames) and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # Vite greets every HMR client with {"type":"connected"}
    assert sockets and sockets[0].startswith(f"ws://{made['slug']}.localhost:{daemon.port}/")
    assert any('"connected"' in str(f) for f in frames)
    (app / "src" / "message.js").write_text('export const message = "changed on disk";\n')
    page.locator("#message", has_text="changed on disk").wait_for(timeout=15000)
