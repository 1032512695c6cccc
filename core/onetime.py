"""One-time grants: a random id, valid for a short time, usable once, carrying one value.

Used to hand a browser across origins without a credential in the URL (the login hand-over to the
dashboard host, the entry to a preview's own origin). They live in the runtime's memory: svc is
one process, and a restart merely asks the person to click again."""

from __future__ import annotations

import secrets
import threading
import time


class OneTimeGrants:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()  # sync views and the event loop both use them
        self._grants: dict[str, tuple[str, float]] = {}  # grant → (value, expiry)

    def issue(self, value: str) -> str:
        now = time.monotonic()
        grant = secrets.token_urlsafe(32)
        with self._lock:
            for key in [k for k, (_, exp) in self._grants.items() if exp < now]:
                del self._grants[key]
            self._grants[grant] = (value, now + self.seconds)
        return grant

    def redeem(self, grant: str) -> str | None:
        """The value, once per live grant; None for a used, expired or unknown grant."""
        with self._lock:
            entry = self._grants.pop(grant, None)
        if entry is None or entry[1] < time.monotonic():
            return None
        return entry[0]
