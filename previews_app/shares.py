"""Share links that render the whole page (contract §8), through one host name.

A share lives under `/preview/s/{share}/` on svc's own origin — the person it is sent to may
reach svc through a tunnel where `*.localhost` does not resolve, so there is no origin of its own.
Its page's root-relative URLs (`/app.js`, `/style.css`, a Vite dev server's `/@vite/client` and
ES-module imports, `fetch("/api/…")`) therefore reach svc's root. The browser says which page asked:
such a request carries a same-origin `Referer` under `/preview/s/{share}/`, and svc answers it with
a 307 to the same path under that share. Shares send `Referrer-Policy: same-origin` so the
browser keeps saying it (and never says it to another origin).

Why not the other ways (docs/previews.md has the evidence): code-server and jupyter-server-proxy
leave root-relative URLs to the app (configure a base path, or use relative URLs), VS Code's port
forwarding gives each port its own host name; rewriting HTML and JavaScript misses URLs built at
run time; a Service Worker needs the page not to be sandboxed and a first load it controls.
"""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.utils import timezone

from core import browser
from previews_app import selectors

_SHARE_PATH = re.compile(r"^/preview/s/(?P<share>[0-9a-f]{32})(?:/|$)")
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")


def own_host(headers: dict[bytes, bytes]) -> bool:
    """Host names svc answers as itself: loopback, its dashboard host, preview origins — and no
    Host at all (an HTTP/1.0 client on this machine; a tunnel always forwards one)."""
    name = browser.host_name(headers.get(b"host", b"").decode("latin-1"))
    return not name or name in _LOOPBACK_NAMES or name.endswith(".localhost") or name == "localhost"


def _share_in_referer(headers: dict[bytes, bytes]) -> str | None:
    referer = headers.get(b"referer", b"").decode("latin-1")
    if not referer:
        return None
    parts = urlsplit(referer)
    if parts.netloc.lower() != headers.get(b"host", b"").decode("latin-1").lower():
        return None  # only the share's own pages, never another site naming a share
    found = _SHARE_PATH.match(parts.path)
    return found["share"] if found else None


async def referring_share(scope: dict, now: datetime) -> str | None:
    """The live share whose page made this root-relative read, or None."""
    if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
        return None
    if scope["path"].startswith("/preview/"):
        return None
    share = _share_in_referer(dict(scope.get("headers") or []))
    if share is None:
        return None
    state, _ = await sync_to_async(selectors.share_lookup)(share, now)
    return share if state == "ok" else None


async def is_share_read(scope: dict) -> bool:
    """Whether a live share's page made this root-relative read (the remote gate asks)."""
    return await referring_share(scope, timezone.now()) is not None
