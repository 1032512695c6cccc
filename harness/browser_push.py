"""Chromium's push messages and service worker, driven through DevTools (CDP) for the browser
tests: a push handed to the dashboard's worker as the browser's push service client would, and
the worker found running."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from playwright.sync_api import BrowserContext, CDPSession, Page, Worker


class DevTools:
    """The service worker registrations and push events DevTools reports: `deliver` hands the
    worker a push as the browser's push service client would, and returns once its `push`
    handler has finished (DevTools' "Push event completed")."""

    def __init__(self, page: Page, cdp: CDPSession) -> None:
        self.page = page  # a page of its own, open for the whole test
        self.cdp = cdp
        self.registrations: dict[str, str] = {}
        self.completed: list[str] = []
        cdp.on("ServiceWorker.workerRegistrationUpdated", self._updated)
        cdp.on("BackgroundService.backgroundServiceEventReceived", self._background)
        cdp.send("ServiceWorker.enable")
        cdp.send("BackgroundService.startObserving", {"service": "pushMessaging"})
        cdp.send(
            "BackgroundService.setRecording", {"shouldRecord": True, "service": "pushMessaging"}
        )

    def _updated(self, event: dict[str, Any]) -> None:
        for registration in event["registrations"]:
            if not registration["isDeleted"]:
                self.registrations[registration["scopeURL"]] = registration["registrationId"]

    def _background(self, event: dict[str, Any]) -> None:
        found = event["backgroundServiceEvent"]
        if found["eventName"] == "Push event completed":
            self.completed.append(next(m["value"] for m in found["eventMetadata"]))

    def until(self, done: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        # CDP events are read while Playwright waits for something: a short wait on the page.
        while not done():
            assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
            self.page.wait_for_timeout(50)

    def registration(self, origin: str) -> str:
        self.until(lambda: f"{origin}/" in self.registrations, f"a worker for {origin}/")
        return self.registrations[f"{origin}/"]

    def deliver(self, origin: str, payload: dict[str, Any]) -> None:
        before = len(self.completed)
        self.cdp.send(
            "ServiceWorker.deliverPushMessage",
            {
                "origin": origin,
                "registrationId": self.registration(origin),
                "data": json.dumps(payload),
            },
        )
        self.until(lambda: len(self.completed) > before, "the push event completing")
        assert self.completed[-1] == "Success", self.completed


def service_worker(context: BrowserContext, page: Page) -> Worker:
    """The dashboard's service worker, running (a worker idle for a while is stopped)."""
    page.evaluate("navigator.serviceWorker.ready.then((r) => r.active.postMessage('wake'))")
    for worker in reversed(context.service_workers):
        if worker.url.endswith("/sw.js"):
            return worker
    return context.wait_for_event("serviceworker", lambda w: w.url.endswith("/sw.js"))
