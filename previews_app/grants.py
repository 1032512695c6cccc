"""Entry to a preview's own origin.

The owner's cookie lives on svc's origin and is never sent to `{slug}.localhost`, so the owner is
handed across with a one-time grant: a random id, valid GRANT_SECONDS, usable once, bound to one
slug. Redeeming it sets `svc_preview`, a cookie signed with svc's secret, host-only on that preview
origin and naming that slug only. Grants live in this process's memory (svc is one process); a
restart merely asks the owner to click again.
"""

from __future__ import annotations

import secrets
import threading
import time

from django.core import signing

from svcproject import config

GRANT_SECONDS = 60
COOKIE_NAME = "svc_preview"
COOKIE_SECONDS = 12 * 3600
_SALT = "previews.origin-cookie"

_lock = threading.Lock()
_grants: dict[str, tuple[str, float]] = {}


def grant_issue(slug: str) -> str:
    now = time.monotonic()
    grant = secrets.token_urlsafe(32)
    with _lock:
        for key in [k for k, (_, exp) in _grants.items() if exp < now]:
            del _grants[key]
        _grants[grant] = (slug, now + GRANT_SECONDS)
    return grant


def grant_redeem(grant: str, slug: str) -> bool:
    """True once for a live grant issued for `slug`; every later or foreign use is False."""
    with _lock:
        entry = _grants.pop(grant, None)
    return entry is not None and entry[0] == slug and entry[1] >= time.monotonic()


def cookie_value(slug: str) -> str:
    return signing.dumps(slug, key=_key(), salt=_SALT)


def _key() -> str:
    """Signed with the owner token in force, so rotating the tokens closes every preview too."""
    return config.current_auth().owner_token


def cookie_opens(value: str, slug: str) -> bool:
    try:
        return signing.loads(value, key=_key(), salt=_SALT, max_age=COOKIE_SECONDS) == slug
    except signing.BadSignature:
        return False


def set_cookie_header(slug: str) -> bytes:
    return (
        f"{COOKIE_NAME}={cookie_value(slug)}; Path=/; Max-Age={COOKIE_SECONDS}; HttpOnly; "
        "SameSite=Lax"
    ).encode()
