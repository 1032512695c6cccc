"""What bench/dashboard.py measures the page with: scripts installed in the page (they watch,
they change nothing the page does), the DevTools protocol's byte counts, and a bare
`/ws/sessions` client as the baseline for list changes.

Bytes come from the Chrome DevTools protocol: body = decoded response bytes (`dataReceived`),
wire = `encodedDataLength` at `loadingFinished` (headers included; static text goes gzipped,
so this is what a phone pays), WS = `/ws…` frame payloads received. Counted until the load
event plus 0.5 s.

The page's own share is measured from the frame's arrival in the page to the sidebar showing
the change (the store parses it, the signals re-render what depends on it).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from playwright.sync_api import CDPSession
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from harness.daemon import Daemon

# Installed before any script of the dashboard runs. Watches the page; changes nothing it does:
# the WebSocket wrapper only adds a listener (registered before the page's `onmessage`, so it
# sees each frame first) and returns the real socket.
PROBE = """
(() => {
  if (location.pathname !== "/") return;
  const EXPECTED = %d;
  const b = window.__bench = { sidebar: 0, pickers: 0, tti: 0, frame: 0, keep: false,
    frames: [], seen: {}, seenP: {}, ended: {}, endedP: {}, paint: {} };
  const Native = window.WebSocket;
  function Probe(url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    if (new URL(url).pathname === "/ws/sessions") {
      ws.addEventListener("message", (event) => {
        if (!b.frame) b.frame = performance.now();
        if (b.keep) b.frames.push({ t: Date.now(), p: performance.now(), data: event.data });
      });
    }
    return ws;
  }
  Probe.prototype = Native.prototype;
  for (const k of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Probe[k] = Native[k];
  window.WebSocket = Probe;
  const observer = new MutationObserver(() => {
    const now = performance.now();
    const listed = document.querySelectorAll("#sidebar-tree li[data-session-id]").length;
    if (!b.sidebar && listed >= EXPECTED) b.sidebar = now;
    if (!b.pickers && document.querySelector("#new-agent option")) b.pickers = now;
    if (b.sidebar && b.pickers) { b.tti = Math.max(b.sidebar, b.pickers); observer.disconnect(); }
  });
  observer.observe(document, { childList: true, subtree: true });
})();
"""

# The list-change watcher, installed once the page shows the list: the first time each session's
# `li` is in the sidebar, and the first time its class says it is no longer live.
WATCH = """() => {
  const b = window.__bench, tree = document.getElementById("sidebar-tree");
  const live = (li) =>
    li.classList.contains("status-starting") || li.classList.contains("status-running");
  const mark = (times, ptimes, key, id) => {
    times[id] = Date.now(); ptimes[id] = performance.now();
    requestAnimationFrame(() => { b.paint[key + id] = Date.now(); });
  };
  const scan = () => {
    for (const li of tree.querySelectorAll("li[data-session-id]")) {
      const id = li.dataset.sessionId;
      if (!(id in b.seen)) mark(b.seen, b.seenP, "seen:", id);
      if (!(id in b.ended) && !live(li)) mark(b.ended, b.endedP, "ended:", id);
    }
  };
  scan();
  new MutationObserver(scan).observe(tree,
    { childList: true, subtree: true, attributes: true, attributeFilter: ["class"] });
  b.frames = []; b.keep = true;
}"""

# After a change was seen: the first frame that carried it into the page, then forget frames.
FRAME_OF = """([id, ended]) => {
  const b = window.__bench;
  const live = (s) => s.status === "starting" || s.status === "running";
  let hit = null;
  for (const f of b.frames) {
    if (!f.data.includes(id)) continue;
    const s = JSON.parse(f.data).find((x) => x.id === id);
    if (s && (!ended || !live(s))) { hit = f; break; }
  }
  b.frames = [];
  const key = ended ? "ended:" : "seen:";
  return { dom: (ended ? b.ended : b.seen)[id], domP: (ended ? b.endedP : b.seenP)[id],
           paint: b.paint[key + id], frame: hit && hit.t, frameP: hit && hit.p,
           bytes: hit && hit.data.length };
}"""

# The "assets" baseline: run at the blank page's start, fetches every listed file in parallel.
FETCH_ALL = """
(() => {
  if (location.pathname !== "%s") return;
  const urls = %s;
  window.__bench = { done: 0 };
  Promise.all(urls.map((u) => fetch(u).then((r) => r.arrayBuffer())))
    .then(() => { window.__bench.done = performance.now(); });
})();
"""

LOADED = "() => performance.getEntriesByType('navigation')[0]?.loadEventEnd > 0"


@dataclass
class Traffic:
    """What one page load moved, from the DevTools protocol's network events."""

    requests: int = 0
    body: int = 0
    wire: int = 0
    ws_in: int = 0
    static: list[str] = field(default_factory=list)

    def watch(self, cdp: CDPSession) -> None:
        cdp.on("Network.requestWillBeSent", self._request)
        cdp.on("Network.dataReceived", self._data)
        cdp.on("Network.loadingFinished", self._finished)
        cdp.on("Network.webSocketFrameReceived", self._frame)
        cdp.send("Network.enable")

    def _request(self, event: dict[str, Any]) -> None:
        self.requests += 1
        path = httpx.URL(event["request"]["url"]).path
        if path.startswith("/static/"):
            self.static.append(path)

    def _data(self, event: dict[str, Any]) -> None:
        self.body += event["dataLength"]

    def _finished(self, event: dict[str, Any]) -> None:
        self.wire += int(event["encodedDataLength"])

    def _frame(self, event: dict[str, Any]) -> None:
        self.ws_in += len(event["response"]["payloadData"].encode())


class BareList:
    """A bare `/ws/sessions` subscriber. Its reader thread only stamps each frame with the bench's
    wall clock and keeps it; frames are parsed later by `wait`, off the path being timed, so the
    bench's own JSON work does not compete with Chromium on the shared core."""

    def __init__(self, svc: Daemon) -> None:
        self.ws: ClientConnection = connect(
            f"{svc.ws_url}/ws/sessions",
            origin=svc.origin,  # type: ignore[arg-type]
            additional_headers=svc.owner_headers(),
            max_size=None,
        )
        self.frames: list[tuple[float, str]] = []
        self.arrived = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            for text in self.ws:
                now = time.time() * 1000
                with self.arrived:
                    self.frames.append((now, str(text)))
                    self.arrived.notify_all()

    def mark(self) -> int:
        with self.arrived:
            return len(self.frames)

    def wait(self, sid: str, ended: bool, since: int, timeout: float = 30) -> float:
        """When the first frame after `since` that shows the change arrived."""
        deadline = time.monotonic() + timeout
        checked = since
        while True:
            with self.arrived:
                fresh = self.frames[checked:]
                if not fresh:
                    left = deadline - time.monotonic()
                    assert left > 0, f"no /ws/sessions frame showed {sid}"
                    self.arrived.wait(left)
                    continue
            checked += len(fresh)
            for at, text in fresh:
                if sid not in text:
                    continue
                s = next(x for x in json.loads(text) if x["id"] == sid)
                if not ended or s["status"] not in ("starting", "running"):
                    return at

    def close(self) -> None:
        self.ws.close()
        self.thread.join(5)


@dataclass
class Load:
    ms: float  # to interactive (dashboard) / all fetched (assets) / load event end (admin)
    traffic: Traffic
    parts: dict[str, float] = field(default_factory=dict)


@dataclass
class Changes:
    api: list[float] = field(default_factory=list)  # the API request itself
    sidebar: list[float] = field(default_factory=list)  # request sent → li in the sidebar
    painted: list[float] = field(default_factory=list)  # → the next animation frame
    bare: list[float] = field(default_factory=list)  # → the bare client's frame
    in_page: list[float] = field(default_factory=list)  # → the frame reaches the page
    page_work: list[float] = field(default_factory=list)  # frame in the page → li
    bytes: list[int] = field(default_factory=list)
