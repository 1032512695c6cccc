"""At most one notice a window (contract §15): how a flood of one event (strangers starting
pairings through a tunnel) becomes one notification saying how many were held back."""

from __future__ import annotations

import time
from collections.abc import Callable


class Coalesce:
    """At most one notice per `window_s`, counting the ones held back. `admit()` decides in one
    synchronous step on the runtime's loop, so two requests arriving together (each on its own
    request thread) cannot both pass. `clock` and `last` may be moved by tests."""

    def __init__(self, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s, self.clock = window_s, clock
        self.last: float | None = None
        self.held = 0

    def admit(self) -> int | None:
        """None: hold this one back. Else how many were held back since the last notice."""
        now = self.clock()
        if self.last is not None and now - self.last < self.window_s:
            self.held += 1
            return None
        held, self.last, self.held = self.held, now, 0
        return held
