"""Stopping the daemon stops every child it started; no orphan outlives svc."""

from __future__ import annotations


async def stop_all() -> None:
    """Filled in by the process host (PTY and ACP sessions register their stoppers here)."""
    for stopper in list(_stoppers):
        await stopper()


_stoppers: list = []


def register(stopper) -> None:  # type: ignore[no-untyped-def]
    _stoppers.append(stopper)
