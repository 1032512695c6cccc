"""The dashboard's usage view (contract §16) in Debian's Chromium, on a desktop and on a 390 px
phone in the dark scheme: model requests go through a live svc's bridge to the fake provider —
three from a hosted session's scope (two profiles, streamed and not) and one from elsewhere —
then `/#view=usage` shows exactly the tokens the fake reported, the cost the profiles' `prices`
make of them, a row naming the session that links to it, and a uPlot chart that fits its box."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import ROOT, Daemon, migrated_home
from harness.fakes.bridge_clients import DRIVERS
from harness.fakes.bridge_fake_plan import extract, plan
from harness.fakes.bridge_setup import ALIAS, base_url, bridge_settings
from harness.fakes.fake_provider import FakeProvider
from harness.termclient import create_session, hosting_settings, shell_env

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
ARTIFACTS = Path(os.environ.get("SVC_TEST_ARTIFACTS", ROOT / "test-artifacts"))
# USD per million tokens. Whole numbers: each request costs a whole number of micro-dollars, so
# the API's six-decimal rounding and the page's display are exact.
PRICES = {"chat": {"input": 3, "output": 15}, "claude": {"input": 2, "output": 11}}
PROVIDER = {"chat": "openai-chat", "claude": "anthropic"}
# (profile, scope is the session's, streamed): the client always speaks OpenAI Chat.
REQUESTS = [
    ("chat", True, False),
    ("chat", True, True),
    ("claude", True, True),
    ("chat", False, False),
]
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
        "color_scheme": "dark",
    },
}


def until(check: Callable[[], Any], timeout: float = 20, what: str = "") -> Any:
    """Polls `check` until it answers something truthy: the request log is written in batches
    by a background task, so a row shows in /api/usage shortly after its request ends."""
    deadline = time.monotonic() + timeout
    while (answer := check()) is None or answer is False:
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return answer


def usd(value: float) -> str:
    """Intl.NumberFormat("en-US", {style: "currency", currency: "USD", 2..6 decimals})."""
    text = f"{value:,.6f}".rstrip("0")
    whole, _, fraction = text.partition(".")
    return f"${whole}.{fraction.ljust(2, '0')}"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A daemon whose usage log holds REQUESTS, with what the fake reported for each."""
    tmp = tmp_path_factory.mktemp("svc-usage")
    fake = FakeProvider().start()
    settings = hosting_settings()
    bridged = bridge_settings(fake)["profiles"]
    for name, price in PRICES.items():
        settings["profiles"][name] = {**bridged[name], "prices": {"fake-model": price}}
    daemon = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    try:
        title = f"usage probe {tmp.name}"
        session = create_session(daemon, tmp, title=title)
        want: dict[str, Any] = {"requests": 0, "input": 0, "output": 0, "usd_micro": 0}
        per_profile: dict[str, int] = {name: 0 for name in PRICES}
        in_session = {"requests": 0, "usd_micro": 0}
        for i, (profile, attributed, stream) in enumerate(REQUESTS):
            scope = f"{session['agent']}.{session['id']}" if attributed else "tests"
            url = base_url(daemon, "openai-chat", profile, scope)
            marker = f"usage-browser-{i}"
            client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
            DRIVERS["openai-chat"](client, ALIAS, marker, stream)
            body = fake.last(marker).body
            inp, out = plan(extract(PROVIDER[profile], body), "fake-model").usage
            micro = inp * PRICES[profile]["input"] + out * PRICES[profile]["output"]
            want["requests"] += 1
            want["input"] += inp
            want["output"] += out
            want["usd_micro"] += micro
            per_profile[profile] += micro
            if attributed:
                in_session["requests"] += 1
                in_session["usd_micro"] += micro

        def logged() -> list[dict[str, Any]] | None:
            rows = httpx.get(
                f"{daemon.url}/api/usage",
                params={"group_by": "day"},
                headers=daemon.owner_headers(),
                timeout=10,
            ).json()
            return rows if sum(r["requests"] for r in rows) == len(REQUESTS) else None

        until(logged, what="the request log to hold every request")
        yield {
            "daemon": daemon,
            "session": session,
            "title": title,
            "want": want,
            "per_profile": per_profile,
            "in_session": in_session,
        }
    finally:
        daemon.stop()
        fake.stop()


@pytest.fixture(params=list(VIEWPORTS))
def page(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Page]:
    context = browser.new_context(locale="en-US", **VIEWPORTS[request.param])
    page = context.new_page()
    page.viewport_name = request.param  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.js_errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def test_the_usage_view_shows_what_the_provider_reported_and_what_it_cost(
    page: Page, recorded: dict[str, Any]
) -> None:
    daemon: Daemon = recorded["daemon"]
    want, sid = recorded["want"], recorded["session"]["id"]
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")
    expect(page.locator("h1")).to_have_text("svc")
    base = page.url.split("#")[0].rstrip("/")
    page.goto(base + "/#view=usage")

    totals = page.locator("#usage .usage-totals")
    expect(totals.locator("[data-total='Requests']")).to_have_text(f"{want['requests']:,}")
    expect(totals.locator("[data-total='Input tokens']")).to_have_text(f"{want['input']:,}")
    expect(totals.locator("[data-total='Output tokens']")).to_have_text(f"{want['output']:,}")
    expect(totals.locator("[data-total='Cached input tokens']")).to_have_text("0")
    expect(totals.locator("[data-total='Cost (USD)']")).to_have_text(usd(want["usd_micro"] / 1e6))

    # One row per session svc hosts, naming it and opening it; the other request is said apart.
    row = page.locator(f"#usage table[data-group=session] tr[data-key='{sid}']")
    expect(row.locator("th a")).to_have_text(recorded["title"])
    expect(row.locator("th a")).to_have_attribute("href", f"#session={sid}")
    in_session = recorded["in_session"]
    expect(row.locator("td").first).to_have_text(str(in_session["requests"]))
    expect(row.locator("td").last).to_have_text(usd(in_session["usd_micro"] / 1e6))
    expect(page.locator("#usage")).to_contain_text("1 of 4 requests came from outside")
    for profile, micro in recorded["per_profile"].items():
        cost = page.locator(f"#usage table[data-group=profile] tr[data-key='{profile}'] td").last
        expect(cost).to_have_text(usd(micro / 1e6))
    expect(page.locator(f"#usage table[data-group=model] tr[data-key='{ALIAS}']")).to_have_count(1)

    # The chart: uPlot's canvas at a real size inside the box, four series (days, input,
    # output, cost; the legend names the three drawn), and a text summary for screen readers.
    chart = page.locator("#usage .usage-chart[role=img]")
    expect(chart).to_have_attribute("aria-label", re.compile(rf"\b{want['requests']} requests\b"))
    label = chart.get_attribute("aria-label") or ""
    assert f"{want['input']:,} input tokens" in label and usd(want["usd_micro"] / 1e6) in label
    canvas = chart.locator(".uplot canvas")
    expect(canvas).to_be_visible()
    box = canvas.bounding_box()
    assert box and box["width"] > 150 and box["height"] > 150, box
    expect(chart).to_have_attribute("data-series", "4")  # uPlot's own count, x included
    legend = chart.locator(".u-legend .u-series")
    expect(legend).to_have_text(["Input tokens", "Output tokens", "Cost (USD)"])
    viewport = page.viewport_size or {}
    assert box["x"] + box["width"] <= viewport["width"], (box, viewport)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"usage-{page.viewport_name}.png"), full_page=True)  # type: ignore[attr-defined]

    # The range picker asks the API for a shorter window; today's requests are still in it.
    page.locator("#usage .usage-range button", has_text="7 days").click()
    expect(page.locator("#usage .usage-range button[aria-pressed=true]")).to_have_text("7 days")
    expect(page.locator("#usage .usage-range [role=status]")).to_contain_text("since ")
    expect(totals.locator("[data-total='Requests']")).to_have_text(f"{want['requests']:,}")
    expect(chart.locator(".uplot canvas")).to_be_visible()

    # The chart follows its box: a narrower window makes a narrower canvas.
    before = canvas.bounding_box()["width"]  # type: ignore[index]
    page.set_viewport_size({"width": max(320, int(viewport["width"] * 0.6)), "height": 800})
    page.wait_for_function(
        "w => document.querySelector('#usage .usage-chart canvas').getBoundingClientRect()"
        ".width < w",
        arg=before,
    )
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run('#usage-box')).violations")
    serious = [v["id"] for v in found if v["impact"] in ("serious", "critical")]
    assert serious == []
    assert page.js_errors == []  # type: ignore[attr-defined]
