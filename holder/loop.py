"""The holder's event loop: a selector with one reader and one writer callback per fd, and
timers; and what a held process and a connection need of the holder that runs it."""

from __future__ import annotations

import selectors
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol


class Loop:
    """The selector with one reader and one writer callback per fd, and timers."""

    def __init__(self) -> None:
        self.sel = selectors.DefaultSelector()
        self.handlers: dict[int, tuple[Callable[[], None] | None, Callable[[], None] | None]] = {}
        self.masks: dict[int, int] = {}
        self.timers: list[tuple[float, Callable[[], object]]] = []

    def watch(
        self, fd: int, on_read: Callable[[], None] | None, on_write: Callable[[], None] | None
    ) -> None:
        mask = (selectors.EVENT_READ if on_read else 0) | (selectors.EVENT_WRITE if on_write else 0)
        known = self.masks.get(fd, 0)
        if not mask:
            if known:
                self.sel.unregister(fd)
                del self.handlers[fd], self.masks[fd]
            return
        self.handlers[fd] = (on_read, on_write)
        if mask == known:
            return  # a system call per output chunk saved: watching is asked for often
        self.masks[fd] = mask
        if known:
            self.sel.modify(fd, mask)
        else:
            self.sel.register(fd, mask)

    def later(self, delay: float, callback: Callable[[], object]) -> None:
        self.timers.append((time.monotonic() + delay, callback))

    def run_once(self, timeout: float) -> None:
        if self.timers:
            timeout = max(0.0, min(timeout, min(t for t, _ in self.timers) - time.monotonic()))
        for key, events in self.sel.select(timeout):
            on_read, on_write = self.handlers.get(key.fd, (None, None))
            if events & selectors.EVENT_READ and on_read:
                on_read()
            # The read may have closed or unwatched it.
            on_read, on_write = self.handlers.get(key.fd, (None, None))
            if events & selectors.EVENT_WRITE and on_write:
                on_write()
        now = time.monotonic()
        due = [t for t in self.timers if t[0] <= now]
        self.timers = [t for t in self.timers if t[0] > now]
        for _, callback in due:
            callback()


class Owner(Protocol):
    """The holder, as its connections and held processes see it."""

    dir: Path
    loop: Loop
    conns: set[Any]

    def notify(self, message: dict[str, Any]) -> None: ...

    def on_first_frame(self, conn: Any, kind: bytes, payload: bytes) -> None: ...

    def on_frame(self, conn: Any, kind: bytes, payload: bytes) -> None: ...

    def on_bad_frame(self, conn: Any, exc: Exception) -> None: ...
