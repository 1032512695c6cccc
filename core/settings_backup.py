"""settings.json.bak never keeps a secret the owner took out of settings.json (issue 41).

The backup is the file svc last wrote over, kept so that a hand edit is never lost
(core.settings_disk). A key the owner removed or replaced — a profile's `api_key`, a channel's
bot token — would otherwise live on in it. Which strings are secrets: the values of keys named
like one (`…key`, `…token`, `…secret`, `…password`), every value under `headers` and `env` (they
often carry credentials), notification URLs (Apprise URLs carry their service's credentials) and
any URL with a password in it. A secret the new settings no longer hold, anywhere, is replaced
by REMOVED wherever it appears in the backup; the rest stays byte for byte when it can.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

REMOVED = "[removed]"
_SECRET_NAME = re.compile(r"(key|token|secret|passw(or)?d)$", re.IGNORECASE)
_SECRET_HOLDERS = ("headers", "env", "urls")  # every value under these is taken for a secret


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def _url_with_password(value: str) -> bool:
    try:
        return "://" in value and bool(urlsplit(value).password)
    except ValueError:
        return False


def secrets_in(node: Any, key: str = "", held: bool = False) -> Iterator[str]:
    """The secret strings in parsed settings (module docstring says which)."""
    if isinstance(node, str):
        named = bool(_SECRET_NAME.search(key)) and not key.endswith("_env")
        if node and (held or named or _url_with_password(node)):
            yield node
    elif isinstance(node, dict):
        for name, value in node.items():
            yield from secrets_in(value, str(name), held or name in _SECRET_HOLDERS)
    elif isinstance(node, list):
        for value in node:
            yield from secrets_in(value, key, held)


def _replaced(node: Any, removed: set[str]) -> Any:
    if isinstance(node, str):
        return REMOVED if node in removed else node
    if isinstance(node, dict):
        return {name: _replaced(value, removed) for name, value in node.items()}
    if isinstance(node, list):
        return [_replaced(value, removed) for value in node]
    return node


def without_removed_secrets(before: bytes, after: Any) -> bytes:
    """`before` (a settings.json that parses) minus every secret `after` no longer holds: the
    strings replaced in the text itself, or — when the text spells one otherwise (escapes) —
    the whole file written again from its parsed form."""
    old = json.loads(before.decode("utf-8") or "{}")
    removed = set(secrets_in(old)) - set(_strings(after))
    if not removed:
        return before
    wanted = _replaced(old, removed)
    text = before.decode("utf-8")
    for secret in sorted(removed, key=len, reverse=True):
        for spelled in {json.dumps(secret), json.dumps(secret, ensure_ascii=False)}:
            text = text.replace(spelled, json.dumps(REMOVED))
    try:
        if json.loads(text) == wanted:
            return text.encode("utf-8")
    except ValueError:
        pass
    return (json.dumps(wanted, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
