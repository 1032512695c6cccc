"""Entry to a preview's own origin.

The owner's cookie lives on svc's origin and is never sent to `{slug}.localhost`, so the owner is
handed across with a one-time grant: a random id, valid GRANT_SECONDS, usable once, bound to one
slug. Redeeming it sets `svc_preview`, a cookie signed with svc's secret, host-only on that preview
origin and naming that slug only. Grants live in the runtime's memory (core.onetime): the ASGI
entry hands the store in.
"""

from __future__ import annotations

import hmac

from django.core import signing

from core import config
from core.onetime import OneTimeGrants

GRANT_SECONDS = 60
COOKIE_NAME = "svc_preview"
COOKIE_SECONDS = 12 * 3600
_SALT = "previews.origin-cookie"


def grant_issue(grants: OneTimeGrants, slug: str) -> str:
    return grants.issue(slug)


def grant_redeem(grants: OneTimeGrants, grant: str, slug: str) -> bool:
    """True once for a live grant issued for `slug`; every later or foreign use is False."""
    redeemed = grants.redeem(grant)
    return redeemed is not None and hmac.compare_digest(redeemed, slug)


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
