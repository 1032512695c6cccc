"""Where a benchmark's processes run, and how its samples are read."""

from __future__ import annotations

import contextlib
import os
import statistics


def pin(pid: int, core: int) -> None:
    """Every thread: threads started before pinning keep their old affinity."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(task), {core})


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: with 10 samples, p99 is the worst of them."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def p50(values: list[float]) -> float:
    return statistics.median(values)
