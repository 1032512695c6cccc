"""Signatures of the fleet's shared rows (contract §18 "Trust"): HMAC-SHA256 of the fleet secret
over the row's canonical JSON (sorted keys, no spaces, datetimes as ISO 8601 in UTC). Anyone who
can write to the database can write a row; only a member holding the secret can write one the
others accept."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    raise TypeError(f"cannot sign a {type(value).__name__}")


def canonical(fields: dict[str, Any]) -> bytes:
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=_plain)
    return text.encode("utf-8")


def sign(secret: str, fields: dict[str, Any]) -> str:
    return hmac.new(secret.encode("utf-8"), canonical(fields), hashlib.sha256).hexdigest()


def verify(secret: str, fields: dict[str, Any], signature: str) -> bool:
    """Constant time; False (never an error) for anything that is not the right signature."""
    if not secret or not isinstance(signature, str):
        return False
    try:
        expected = sign(secret, fields)
    except (TypeError, ValueError):
        return False
    return hmac.compare_digest(expected, signature)
