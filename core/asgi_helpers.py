"""What every raw ASGI piece of svc reads off a request, written once: a header, a cookie, the
browser's Fetch Metadata, whether an Origin is the request's own; and the one redirect raw ASGI
code sends (a path under another base)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import urlsplit

Headers = Iterable[tuple[bytes, bytes]]
# One spelling of ASGI for svc's own raw apps (as Starlette's types.py).
Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PARTS = "svc"  # the scope key of the daemon's parts, put there by svcproject.parts.InScope


def parts_in(scope: Mapping[str, Any]) -> Any:
    """The daemon's parts this scope carries; each app casts them to its own Protocol (its
    `parts.py`), which svcproject.parts checks `Parts` against."""
    try:
        return scope[PARTS]
    except KeyError:
        raise RuntimeError(
            "no svc parts in this scope: it did not pass svcproject.parts.InScope"
        ) from None


def request_scope(request: Any) -> Scope:
    """The ASGI scope of a Django request (an ASGIRequest's; DRF's Request passes it on)."""
    scope: Scope | None = getattr(request, "scope", None)
    if scope is None:
        raise RuntimeError("not an ASGI request: svc's parts reach views through the ASGI scope")
    return scope


def header_in(headers: Headers | None, name: bytes) -> str:
    """The first header `name` (lower-case bytes, as ASGI gives them), or ''."""
    for key, value in headers or ():
        if key == name:
            return value.decode("latin-1")
    return ""


def header(scope: dict, name: bytes) -> str:
    return header_in(scope.get("headers"), name)


def cookie_in(cookie_header: str, name: str) -> str:
    """One cookie's value from a Cookie header, or '' (a malformed header holds none)."""
    jar = SimpleCookie()
    try:
        jar.load(cookie_header)
    except CookieError:
        return ""
    morsel = jar.get(name)
    return morsel.value if morsel else ""


def cookie(scope: dict, name: str) -> str:
    return cookie_in(header(scope, b"cookie"), name)


def own_origin(scope: dict, origin: str) -> bool:
    """`origin` is this request's own: http(s) and exactly the Host it was sent to."""
    parts = urlsplit(origin)
    host = header(scope, b"host").lower()
    return parts.scheme in ("http", "https") and bool(host) and parts.netloc.lower() == host


def fetch_metadata(scope: dict) -> bool:
    """The browser sent Fetch Metadata: it does in a secure context (https, or a loopback host)
    and nowhere else (docs/remote.md)."""
    return bool(header(scope, b"sec-fetch-mode") or header(scope, b"sec-fetch-site"))


async def send_under(scope: dict, send: Callable, base: str) -> None:
    """307 to this request's own path and query under `base` (a share's or, through a tunnel,
    an owner preview's path), for the page that made it (its Referer said so): 307 keeps the
    method and body."""
    raw = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
    query = scope.get("query_string", b"").decode("latin-1")
    location = f"{base}{raw}" + (f"?{query}" if query else "")
    headers = [
        (b"location", location.encode("latin-1")),
        (b"cache-control", b"no-store"),
        (b"vary", b"referer"),
    ]
    await send({"type": "http.response.start", "status": 307, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
