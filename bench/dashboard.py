"""The dashboard with 200 sessions listed, in headless Debian Chromium (Playwright, 1280×800):
first load (bytes, requests, time to interactive) and the time from a list change to the sidebar
showing it, each beside a baseline measured in the same run. How the page is watched (probes,
bytes, the bare client): bench/support/dashboard_probes.py.

The list: 200 `shell` sessions created through `POST /api/sessions` in 4 registered workspaces;
12 stay live, the other 188 are stopped at once (`DELETE …?wait=1`; exited sessions stay
listed), so the list mixes states without 200 bashes on two cores.

First load, cold (a fresh browser context each time, so an empty cache), interleaved rounds:
- dashboard: time to interactive = navigation start → the sidebar shows all 200 sessions AND the
  new-session pickers are filled (`#new-agent option`), read with `performance.now()` in the page
  by a MutationObserver installed before any of the page's scripts;
- baseline "assets": a same-origin page (`/static/svc/favicon.svg`) that fetches, in parallel, the
  very static files the dashboard loaded and runs none of them — the transfer cost of the
  dashboard's bytes with no app logic, no API calls and no socket;
- baseline "admin": Django admin's changelist of the same 200 sessions on one page
  (`/admin/sessions_app/session/?all=`), a server-rendered page of the same list, to its load
  event end.
List change → sidebar, with one dashboard open, three series of 30 (sessions of an `idle` agent,
`sleep 3600`, so no bash start-up shares the server's core — see bench/lists.py): created in the
workspace whose sidebar group is on top; created in another workspace each time, so its group
moves to the top (what starting a session in another project does); then the first series
stopped (a status change, no group moves). Each is timed from just before the API request (the
bench's `time.time()`) to the page's `Date.now()` when a MutationObserver on `#sidebar-tree` sees
the new `li` (or its `status-*` class leave the live ones), and to the next animation frame;
same machine, same clock. Baseline: a bare `websockets` client subscribed to `/ws/sessions` in
the bench, timed to the first snapshot that shows the same change (the API call plus the
broadcast: the earliest any client can know).
The daemon is pinned to core 0, the bench, its socket client and Chromium to core 1.

    .venv/bin/python bench/dashboard.py        (make bench runs it with a temp SVC_HOME)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from playwright.sync_api import Browser, BrowserContext, Page  # noqa: E402

from bench.support.dashboard_probes import (  # noqa: E402
    FETCH_ALL,
    FRAME_OF,
    LOADED,
    PROBE,
    WATCH,
    BareList,
    Changes,
    Load,
    Traffic,
)
from bench.support.machine import p50, percentile, pin  # noqa: E402
from harness.browser import chromium  # noqa: E402
from harness.browser_login import dashboard_url, logged_in  # noqa: E402
from harness.daemon import Daemon, migrated_home  # noqa: E402
from harness.termclient import hosting_settings, shell_env  # noqa: E402

SESSIONS = 200
LIVE_SESSIONS = 12
WORKSPACES = 4
LOADS = int(os.environ.get("BENCH_DASHBOARD_LOADS", "10"))
CHANGES = int(os.environ.get("BENCH_DASHBOARD_CHANGES", "30"))
GAP_S = 0.15  # after each change: the follow-up snapshot (starting → running) passes first
SETTLE_MS = 500  # after the load event: late requests (sockets, pickers) still count
VIEWPORT = {"width": 1280, "height": 800}
SERVER_CORE, CLIENT_CORE = 0, 1
SERIES = {
    "create": "a session created in the workspace whose group is on top",
    "create, group moves": "created in another workspace, whose group moves to the top",
    "stop": "a session of the first series stopped (its status changes, no group moves)",
}
RENDER_FLAG_MS = 50.0  # the page's own work per snapshot above this is worth a report
ADMIN_LIST = "/admin/sessions_app/session/?all="  # `all`: every row on one page (≤ 200)
BLANK = "/static/svc/favicon.svg"


# --- processes ---------------------------------------------------------------------------------


def start_svc(tmp: Path) -> Daemon:
    settings = hosting_settings()
    # `idle` does no start-up work of its own: the changes measure the list path, not bash.
    settings["agents"]["idle"] = {"command": ["sleep", "3600"]}
    home = migrated_home(tmp / "home", settings)
    svc = Daemon(home, env=shell_env(tmp)).start()
    assert svc.proc is not None
    if PINNED:
        pin(svc.proc.pid, SERVER_CORE)
    return svc


PINNED = (os.cpu_count() or 1) >= 2


def populate(svc: Daemon, http: httpx.Client, tmp: Path) -> list[str]:
    """200 sessions through the API: the first 12 stay live, the rest are stopped."""
    paths = []
    for n in range(WORKSPACES):
        path = tmp / f"project-{n}"
        path.mkdir()
        made = http.post(f"{svc.url}/api/workspaces", json={"path": str(path)})
        assert made.status_code in (200, 201), made.text
        paths.append(str(path))
    for n in range(SESSIONS):
        body = {"agent": "shell", "workspace": paths[n % WORKSPACES], "kind": "terminal"}
        made = http.post(f"{svc.url}/api/sessions", json=body)
        assert made.status_code == 201, made.text
        if n >= LIVE_SESSIONS:
            sid = made.json()["id"]
            stopped = http.delete(f"{svc.url}/api/sessions/{sid}", params={"wait": "1"})
            assert stopped.status_code == 200, stopped.text
    listed = http.get(f"{svc.url}/api/sessions").json()
    live = sum(s["status"] in ("starting", "running") for s in listed)
    assert len(listed) == SESSIONS and live == LIVE_SESSIONS, (len(listed), live)
    return paths


# --- first load ----------------------------------------------------------------------------------


def fresh(browser: Browser, cookie: str, base: str, script: str = "") -> tuple[Page, Traffic]:
    context: BrowserContext = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    context.add_cookies([{"name": "svc_session", "value": cookie, "url": base}])
    if script:
        context.add_init_script(script)
    page = context.new_page()
    traffic = Traffic()
    traffic.watch(context.new_cdp_session(page))
    return page, traffic


def settle(page: Page) -> None:
    page.wait_for_function(LOADED, timeout=60_000)
    page.wait_for_timeout(SETTLE_MS)  # the sync API delivers the CDP events while it waits


def load_dashboard(browser: Browser, cookie: str, base: str) -> Load:
    page, traffic = fresh(browser, cookie, base, PROBE % SESSIONS)
    page.goto(f"{base}/", wait_until="commit")
    page.wait_for_function("() => window.__bench && window.__bench.tti > 0", timeout=60_000)
    settle(page)
    marks = page.evaluate(
        "() => ({ ...window.__bench, dcl: performance.getEntriesByType('navigation')[0]"
        ".domContentLoadedEventEnd })"
    )
    page.context.close()
    parts = {k: marks[k] for k in ("dcl", "frame", "pickers", "sidebar")}
    return Load(marks["tti"], traffic, parts)


def load_assets(browser: Browser, cookie: str, base: str, static: list[str]) -> Load:
    page, traffic = fresh(browser, cookie, base, FETCH_ALL % (BLANK, json.dumps(static)))
    page.goto(f"{base}{BLANK}", wait_until="commit")
    page.wait_for_function("() => window.__bench && window.__bench.done > 0", timeout=60_000)
    settle(page)
    done = page.evaluate("() => window.__bench.done")
    page.context.close()
    return Load(done, traffic)


def load_admin(browser: Browser, cookie: str, base: str) -> Load:
    page, traffic = fresh(browser, cookie, base)
    page.goto(f"{base}{ADMIN_LIST}", wait_until="commit")
    settle(page)
    rows = page.locator("#result_list tbody tr").count()
    assert rows == SESSIONS, f"the admin changelist shows {rows} rows"
    end = page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd")
    page.context.close()
    return Load(end, traffic)


def first_loads(browser: Browser, cookie: str, base: str) -> dict[str, list[Load]]:
    warm = load_dashboard(browser, cookie, base)  # also warms the daemon's first requests
    static = sorted(set(warm.traffic.static))
    load_assets(browser, cookie, base, static)
    load_admin(browser, cookie, base)
    loads: dict[str, list[Load]] = {"dashboard": [], "assets": [], "admin": []}
    for _ in range(LOADS):  # interleaved: a change in the machine's load hits all three
        loads["dashboard"].append(load_dashboard(browser, cookie, base))
        loads["assets"].append(load_assets(browser, cookie, base, static))
        loads["admin"].append(load_admin(browser, cookie, base))
    return loads


# --- list change → sidebar -----------------------------------------------------------------------


def measure_change(page: Page, bare: BareList, into: Changes, act: Any, ended: bool) -> str:
    since = bare.mark()
    sent = time.time() * 1000
    sid = act()
    into.api.append(time.time() * 1000 - sent)
    key = "ended" if ended else "seen"
    page.wait_for_function(
        "([k, id]) => window.__bench[k][id] && window.__bench.paint[k + ':' + id]",
        arg=[key, sid],
        timeout=30_000,
    )
    at = page.evaluate(FRAME_OF, [sid, ended])
    into.sidebar.append(at["dom"] - sent)
    into.painted.append(at["paint"] - sent)
    into.bare.append(bare.wait(sid, ended, since) - sent)
    assert at["frame"] is not None, f"no /ws/sessions frame in the page carried {sid}"
    into.in_page.append(at["frame"] - sent)
    into.page_work.append(at["domP"] - at["frameP"])
    into.bytes.append(at["bytes"])
    time.sleep(GAP_S)
    return sid


def list_changes(
    browser: Browser, cookie: str, base: str, svc: Daemon, http: httpx.Client, paths: list[str]
) -> dict[str, Changes]:
    """Three series of CHANGES each; see SERIES."""
    page, _ = fresh(browser, cookie, base, PROBE % SESSIONS)
    page.goto(f"{base}/", wait_until="commit")
    page.wait_for_function("() => window.__bench && window.__bench.tti > 0", timeout=60_000)
    settle(page)
    page.evaluate(WATCH)
    bare = BareList(svc)
    series = {name: Changes() for name in SERIES}

    def create(workspace: str) -> str:
        body = {"agent": "idle", "workspace": workspace, "kind": "terminal"}
        made = http.post(f"{svc.url}/api/sessions", json=body)
        assert made.status_code == 201, made.text
        return made.json()["id"]

    def stop(sid: str) -> str:
        answer = http.delete(f"{svc.url}/api/sessions/{sid}")
        assert answer.status_code in (200, 202), answer.text
        return sid

    try:
        # Not measured: puts the first workspace's group on top for the "same group" series.
        measure_change(page, bare, Changes(), lambda: create(paths[0]), ended=False)
        top = [
            measure_change(page, bare, series["create"], lambda: create(paths[0]), ended=False)
            for _ in range(CHANGES)
        ]
        for n in range(CHANGES):  # each in another workspace than the last: its group moves up
            where = paths[1 + n % (WORKSPACES - 1)]
            measure_change(page, bare, series["create, group moves"], lambda w=where: create(w),
                           ended=False)  # fmt: skip
        # The top group is now the last moved one: these stops change a status, not the order.
        for sid in top:
            measure_change(page, bare, series["stop"], lambda s=sid: stop(s), ended=True)
    finally:
        bare.close()
        page.context.close()
    return series


# --- report --------------------------------------------------------------------------------------


def report_loads(loads: dict[str, list[Load]]) -> None:
    names = {
        "dashboard": "dashboard, to interactive",
        "assets": "assets only (same files, fetched)",
        "admin": "admin changelist, 200 rows, load end",
    }
    base = loads["dashboard"]
    print(f"First load, cold, {VIEWPORT['width']}×{VIEWPORT['height']}, n={LOADS} each:")
    print(
        f"  {'page':<38} {'req':>4} {'body KB':>8} {'wire KB':>8} {'WS KB':>6}"
        f" {'p50 ms':>7} {'p99 ms':>7} {'dash/this p50':>13} {'p99':>5}"
    )
    for key, runs in loads.items():
        times = [r.ms for r in runs]
        mean = {
            attr: statistics.mean(getattr(r.traffic, attr) for r in runs)
            for attr in ("requests", "body", "wire", "ws_in")
        }
        dash = [r.ms for r in base]
        worst = percentile(dash, 0.99) / percentile(times, 0.99)
        ratio = (
            f" {p50(dash) / p50(times):12.2f}× {worst:4.2f}×"
            if key != "dashboard"
            else f" {'—':>13} {'—':>5}"
        )
        print(
            f"  {names[key]:<38} {mean['requests']:4.0f} {mean['body'] / 1024:8.1f}"
            f" {mean['wire'] / 1024:8.1f} {mean['ws_in'] / 1024:6.1f}"
            f" {p50(times):7.1f} {percentile(times, 0.99):7.1f}{ratio}"
        )
    wire = statistics.mean(r.traffic.wire + r.traffic.ws_in for r in base)
    for key in ("assets", "admin"):
        other = statistics.mean(r.traffic.wire + r.traffic.ws_in for r in loads[key])
        print(f"  bytes (wire + WS), dashboard / {key}: {wire / other:.2f}×")
    parts = {k: [r.parts[k] for r in base] for k in base[0].parts}
    print(
        "  dashboard, p50 from navigation start: "
        + ", ".join(f"{k} {p50(v):.1f} ms" for k, v in parts.items())
        + f"; first snapshot → 200 in the sidebar p50 "
        f"{p50([r.parts['sidebar'] - r.parts['frame'] for r in base]):.1f} ms"
    )


def report_changes(series: dict[str, Changes], snapshot: int) -> None:
    listed = SESSIONS + 1 + 2 * CHANGES
    print(
        f"List change → sidebar, one dashboard open ({SESSIONS}→{listed} listed, a snapshot"
        f" ≈ {snapshot / 1024:.0f} KB), n={CHANGES} each, ms from just before the API request,"
        " p50 / p99:"
    )
    for name, what in SERIES.items():
        print(f"  {name}: {what}")
    print(f"  {'':<38}" + "".join(f" {name:>21}" for name in series))
    rows = (
        ("the API request itself", "api"),
        ("bare /ws/sessions client (baseline)", "bare"),
        ("frame reaches the page", "in_page"),
        ("sidebar shows it (DOM)", "sidebar"),
        ("sidebar, next animation frame", "painted"),
        ("page work: frame in page → sidebar (parse, store, render)", "page_work"),
    )
    for label, attr in rows:
        cells = []
        for c in series.values():
            values = getattr(c, attr)
            cells.append(f"{p50(values):9.1f} / {percentile(values, 0.99):7.1f}" if values else "—")
        print(f"  {label:<38}" + "".join(f" {cell:>21}" for cell in cells))
    ratios = []
    for c in series.values():
        worst = percentile(c.sidebar, 0.99) / percentile(c.bare, 0.99)
        ratios.append(f"{p50(c.sidebar) / p50(c.bare):8.2f}× / {worst:5.2f}×")
    print(f"  {'sidebar / bare client':<38}" + "".join(f" {r:>21}" for r in ratios))
    for name, c in series.items():
        work = percentile(c.page_work, 0.99)
        if p50(c.page_work) > RENDER_FLAG_MS or work > RENDER_FLAG_MS:
            print(f"  {name}: the page's own work per snapshot, p50 {p50(c.page_work):.1f} ms,"
                  f" p99 {work:.1f} ms (flag: {RENDER_FLAG_MS:.0f} ms)")  # fmt: skip


def main() -> None:
    if PINNED:
        os.sched_setaffinity(0, {CLIENT_CORE})  # inherited by Playwright's driver and Chromium
    tmp = Path(tempfile.mkdtemp(prefix="svc-bench-dashboard-"))
    started = time.monotonic()
    svc = start_svc(tmp)
    try:
        with httpx.Client(headers=svc.owner_headers(), timeout=60) as http:
            paths = populate(svc, http, tmp)
            print(
                f"{SESSIONS} sessions listed in {WORKSPACES} workspaces, created through the API:"
                f" {LIVE_SESSIONS} live shells, {SESSIONS - LIVE_SESSIONS} shells stopped"
                f" ({time.monotonic() - started:.0f} s)"
            )
            with logged_in(svc) as browser_http:
                cookie = browser_http.cookies["svc_session"]
            base = dashboard_url(svc)
            with chromium() as browser:
                loads = first_loads(browser, cookie, base)
                series = list_changes(browser, cookie, base, svc, http, paths)
            snapshot = len(http.get(f"{svc.url}/api/sessions").content)
    finally:
        svc.stop()
    load = os.getloadavg()
    print(
        f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f};"
        f" daemon pinned to core {SERVER_CORE}, bench + Chromium to core {CLIENT_CORE}"
        if PINNED
        else f"machine: {os.cpu_count()} core, nothing pinned"
    )
    report_loads(loads)
    report_changes(series, snapshot)
    print(f"total {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
