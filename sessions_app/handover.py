"""Handover codes (contract §4): an agent's session, handed to another device with four characters.

A code is 4 characters from a 32-letter alphabet (no 0/O, 1/I), drawn from the OS CSPRNG,
unique among live codes, case-insensitive, usable once and for CODE_SECONDS. More than
FAILURES_PER_MINUTE failed pickups a minute lock pickup for everyone: everything reaches svc
from loopback, so a per-caller limit would limit nothing. What this module holds is the codes'
shape and the failure window; issuing and redeeming them are writes, in
sessions_app/services/handover.py.
"""

from __future__ import annotations

import collections
import secrets
import threading
from datetime import datetime, timedelta

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 4
CODE_SECONDS = 120
FAILURES_PER_MINUTE = 10


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalise(code: str) -> str:
    return code.strip().upper()


class FailureWindow:
    """Failed pickups of the last minute, for the whole daemon."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._times: collections.deque[datetime] = collections.deque()

    def _trim(self, now: datetime) -> None:
        while self._times and self._times[0] <= now - timedelta(minutes=1):
            self._times.popleft()

    def locked(self, now: datetime) -> bool:
        with self._lock:
            self._trim(now)
            return len(self._times) >= FAILURES_PER_MINUTE

    def add(self, now: datetime) -> None:
        with self._lock:
            self._times.append(now)

    def clear(self) -> None:
        with self._lock:
            self._times.clear()
