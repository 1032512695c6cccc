"""What the remote listener serves (contract §13), by path alone. Shared by the ASGI gate and the
before-body admission, so both refuse the same requests."""

from __future__ import annotations

from typing import Literal

Route = Literal["refused", "open", "pairing", "dashboard", "paired", "other"]

# Never on the remote listener, whatever the request's headers or credentials say.
_REFUSED = ("/svc/", "/mcp", "/admin", "/login", "/logout")
_OPEN = ("/static/", "/preview/s/")
_PAIRED = ("/api/", "/ws", "/preview/u/", "/md-preview/")
# The dashboard's service worker: public code like /static/, served at the root for its scope
# (notifications_app/views_sw.py). A share's own root-relative /sw.js still goes to the share:
# the preview router looks at the Referer before Django's routes.
SERVICE_WORKER = "/sw.js"


def route_of(path: str) -> Route:
    if path == "/":
        return "dashboard"
    if path.startswith(_REFUSED):
        return "refused"
    if path.startswith(_OPEN) or path == SERVICE_WORKER:
        return "open"
    if path == "/pair" or path.startswith("/pair/"):
        return "pairing"
    if path.startswith(_PAIRED):
        return "paired"
    return "other"  # a shared page's root-relative read, or nothing


REMOTE_COOKIE = "svc_remote"
PAGE_KEY_HEADER = b"x-svc-page-key"
PAGE_KEY_PROTOCOL = "svc.page."  # + the key: how the dashboard proves itself on a WebSocket
