"""Twisted's reactor, for the few places svc schedules on it directly (daphne serves svc on
Twisted's asyncio reactor)."""

from __future__ import annotations

import sys
from typing import Any


def installed() -> Any:
    """The reactor the process runs on."""
    # Imported when asked for, never at a module's top: importing twisted.internet.reactor
    # installs Twisted's default reactor when none is installed yet, and svc must run on the
    # asyncio one that daphne.server installs (Django loads it first: daphne is an app).
    from twisted.internet import reactor

    return reactor


def running() -> Any | None:
    """The reactor when svc runs under daphne, else None (tests in process, other servers)."""
    return installed() if "twisted.internet.reactor" in sys.modules else None
