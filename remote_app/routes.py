"""What the remote listener serves (contract §13), by path alone. Shared by the ASGI gate and the
before-body admission, so both refuse the same requests."""

from __future__ import annotations

import re
from typing import Literal

Route = Literal["refused", "open", "pairing", "dashboard", "paired", "other"]

# Never on the remote listener, whatever the request's headers or credentials say.
_REFUSED = ("/svc/", "/mcp", "/admin", "/login", "/logout")
_OPEN = ("/static/", "/preview/s/")
_PAIRED = ("/api/", "/ws", "/preview/u/", "/md-preview/", "/docs/")
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


# --- what a paired device may change (contract §13 "What a paired device may do") --------------
# A paired device uses sessions; it never changes what svc executes or who may reach it. Writes
# are refused on the remote listener unless listed here (deny by default: a write added later is
# the machine's own until someone decides otherwise). docs/remote.md lists every /api/ write.
_REMOTE_WRITES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (method, re.compile(pattern))
    for method, pattern in (
        ("POST", r"/api/sessions"),  # start a session of a declared agent
        ("DELETE", r"/api/sessions/[^/]+"),  # stop one
        # Stopping all is stopping each, in one call: a person away from the machine ends a
        # runaway agent. It only lowers what runs.
        ("POST", r"/api/sessions/stop_all"),
        # The same session again: its declared agent in its workspace, as POST /api/sessions.
        ("POST", r"/api/sessions/[^/]+/resume"),
        # Answering a waiting permission: using a session (the dashboard's /ws/chat does it too).
        ("POST", r"/api/sessions/[^/]+/permissions"),
        ("POST", r"/api/sessions/[^/]+/diff/comments"),
        ("POST", r"/api/subagents/[^/]+/(diff/comments|merge|discard)"),
        ("DELETE", r"/api/subagent-turns/[^/]+"),
        # A code to continue a session elsewhere: picking it up still takes the owner's key.
        ("POST", r"/api/sessions/[^/]+/handover"),
        ("POST", r"/api/handover/pickup"),
        ("POST", r"/api/workspaces"),
        ("PATCH", r"/api/workspaces/\d+"),
        ("DELETE", r"/api/workspaces/\d+"),
        ("POST", r"/api/previews"),
        ("DELETE", r"/api/previews/[^/]+"),
        ("POST", r"/api/push/subscriptions"),  # this browser's own notifications
        ("DELETE", r"/api/push/subscriptions"),
        ("DELETE", r"/api/pairings/[^/]+"),  # revoking lowers who may reach svc
        # A device's name: changes nothing svc runs or who reaches it; the view lets a device
        # rename only itself (remote_app/device_names.py).
        ("PATCH", r"/api/pairings/[^/]+"),
        ("POST", r"/api/pairings/requests/[^/]+/deny"),
    )
)
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
MAIN_PORT_ONLY = (
    "a paired device uses sessions but cannot change what svc runs or who may reach it: make "
    "this change on svc's own machine (its dashboard, or bin/svc there)"
)


def remote_write_allowed(method: str, path: str) -> bool:
    """Whether a paired device may make this request through the remote listener."""
    if method.upper() in _SAFE_METHODS or not path.startswith("/api/"):
        return True
    return any(m == method.upper() and p.fullmatch(path) for m, p in _REMOTE_WRITES)
