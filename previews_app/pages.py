"""Small HTML/JSON answers of the preview surfaces. None of them echoes the request or the
proxy target: jupyter-server-proxy's CVE-2024-35225 was an error page reflecting its host."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from html import escape

PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem}"
    "@media (prefers-color-scheme:dark){body{background:#111;color:#ddd}}"
)

MESSAGES: dict[str, tuple[int, str, str]] = {
    "unreachable": (
        502,
        "Nothing is listening",
        "Nothing is listening on the port this preview points at. Start the dev server "
        "on this machine (listening on the loopback address), then reload this page.",
    ),
    "refused_port": (
        403,
        "Port refused",
        "This preview points at a port svc never proxies to (svc's own port or a deny-listed "
        "service port such as a database).",
    ),
    "not_found": (404, "No such preview", "There is no preview here. It may have been deleted."),
    "expired": (
        410,
        "Share link expired",
        "This share link was valid for 600 seconds and has expired. Ask for a new one.",
    ),
    "method": (
        405,
        "Read-only preview",
        "This preview URL answers GET and HEAD only (shares are read-only).",
    ),
    "login": (
        401,
        "Log in to svc",
        "This preview belongs to svc's owner. Open the login URL svc printed at start-up (or "
        "open <code>/login?token=</code> with <code>owner_token</code> from "
        "<code>$SVC_HOME/auth.json</code>), then open the preview again.",
    ),
    "cross_site": (
        403,
        "Open previews from svc",
        "Another site (or another preview) tried to open this preview. Open it from svc's "
        "dashboard or type its address.",
    ),
    "foreign_host": (
        403,
        "Not here",
        "svc answers this address only to this machine. Only share links work through another "
        "host name.",
    ),
    "grant": (
        403,
        "Preview link used or expired",
        "This preview link was for one use within a minute. Open the preview again from svc.",
    ),
}


def _accepts_html(headers: dict[bytes, bytes]) -> bool:
    return b"text/html" in headers.get(b"accept", b"")


def page(kind: str, headers: dict[bytes, bytes], extra: Iterable = ()) -> tuple[int, list, bytes]:
    """(status, headers, body): HTML for browsers, the /api/ JSON error shape for the rest."""
    status, title, text = MESSAGES[kind]
    if _accepts_html(headers):
        body = (
            f"<!doctype html><meta charset=utf-8><meta name=color-scheme content='light dark'>"
            f"<title>svc: {escape(title)}</title><style>{_STYLE}</style>"
            f"<h1>{escape(title)}</h1><p>{text}</p>"
        ).encode()
        ctype = b"text/html; charset=utf-8"
    else:
        plain = text.replace("<code>", "'").replace("</code>", "'")
        error = {"status": status, "code": kind, "message": plain}
        body = json.dumps({"error": error}).encode()
        ctype = b"application/json"
    out = [
        (b"content-type", ctype),
        (b"content-security-policy", PAGE_CSP.encode()),
        (b"referrer-policy", b"no-referrer"),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
        *extra,
    ]
    if status == 405:
        out.append((b"allow", b"GET, HEAD"))
    if status == 401:
        out.append((b"www-authenticate", b'Bearer realm="svc"'))
    return status, out, body


async def send_page(
    send: Callable, kind: str, headers: dict[bytes, bytes], head: bool = False
) -> None:
    status, out, body = page(kind, headers)
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def send_redirect(send: Callable, location: str, cookies: Iterable[bytes] = ()) -> None:
    headers = [
        (b"location", location.encode("latin-1")),
        (b"cache-control", b"no-store"),
        (b"referrer-policy", b"no-referrer"),
        *((b"set-cookie", c) for c in cookies),
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
