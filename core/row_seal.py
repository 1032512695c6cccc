"""Seals on the database rows that grant access (docs/security.md, attacker 8): an approved
pairing, a paired device, an invite, a queued prompt, a prompt's key, a handover code, a channel's
unfinished message, the launch of a resumed session.

Whoever can write svc's database (a shared PostgreSQL) can write any of these rows; svc must not
act on one it did not write. Each is sealed with HMAC-SHA256 under a key only this member holds —
`$SVC_HOME/row-seal.key`, 0600, made on first use — over the fields that grant, and the seal is
checked where the row is used. A row whose seal does not verify is never acted on, and is logged
once per process.

A key of its own, not one derived from the owner token: `rotate_tokens` replaces the owner token,
and what was queued must outlive a rotation (contract §17). Pairings still end with a rotation: a
paired device's seal covers the token fingerprint it was paired under (remote_app/pairing.py).
In a fleet each member has its own $SVC_HOME and so its own key, and verifies only the rows of its
own schema. The key never leaves the member: the database holds seals, never the key.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core import config

logger = logging.getLogger("core.row_seal")

KEY_FILE = "row-seal.key"
KEY_MODE = 0o600
_LOGGED_MAX = 10_000  # refusals remembered for "log once"; past it, forgotten and logged again
_logged: set[tuple[str, str]] = set()
_logged_lock = threading.Lock()


def key_path() -> Path:
    return config.svc_home() / KEY_FILE


def _key() -> bytes:
    return _key_in(config.svc_home())


@functools.cache
def _key_in(home: Path) -> bytes:
    """The key, read once per process; made on first use. Two processes making it at once (the
    daemon and `manage.py pair`) agree: the file is linked into place only if none is there."""
    target = home / KEY_FILE
    if not target.exists():
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(8)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, KEY_MODE)
        try:
            os.write(fd, (secrets.token_hex(32) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, target)
        except FileExistsError:
            pass  # another process made it first: its key is the key
        finally:
            tmp.unlink()
    if target.stat().st_mode & 0o777 != KEY_MODE:
        target.chmod(KEY_MODE)
    text = target.read_text(encoding="ascii").strip()
    if len(text) != 64:
        raise RuntimeError(f"{target} is not an svc row-seal key: remove it to make a new one")
    return bytes.fromhex(text)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return str(value)  # UUIDs, Decimals: their text is what the row holds


def seal(kind: str, *fields: Any) -> str:
    """The seal of a row of `kind` holding `fields` (in a fixed order: its caller's)."""
    text = json.dumps([kind, *fields], separators=(",", ":"), sort_keys=True, default=_plain)
    return hmac.new(_key(), text.encode("utf-8"), hashlib.sha256).hexdigest()


def sealed(kind: str, given: Any, *fields: Any) -> bool:
    """Whether `given` is the seal of these fields. Constant time; False (never an error) for
    anything that is not the seal: empty, None, another type."""
    if not isinstance(given, str) or not given:
        return False
    return hmac.compare_digest(given.encode(), seal(kind, *fields).encode())


def refused(kind: str, ident: Any, what: str) -> None:
    """Say once per process that a row of `kind` was not acted on: its seal does not verify, so
    svc did not write it (or it was changed since). `what` says what was not done."""
    mark = (kind, str(ident))
    with _logged_lock:
        if mark in _logged:
            return
        if len(_logged) >= _LOGGED_MAX:
            _logged.clear()
        _logged.add(mark)
    logger.warning(
        "ignored a %s row (%s) that svc did not write (its seal does not verify): %s",
        kind,
        ident,
        what,
    )
