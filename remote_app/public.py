"""Where svc can be reached from outside right now: the public URLs of the tunnels that are
online (contract §13). Share URLs go out on the first of them."""

from __future__ import annotations

from urllib.parse import urlsplit


def public_urls() -> list[str]:
    """The public URLs of online tunnels, in name order."""
    from svcproject.runtime import current_or_none

    runtime = current_or_none()
    if runtime is None:
        return []
    return [url for _, url in sorted(runtime.public_urls.items()) if url]


def share_base() -> str | None:
    urls = public_urls()
    return urls[0].rstrip("/") if urls else None


def scheme_for_host(host_header: str) -> str | None:
    host = host_header.strip().lower()
    for url in public_urls():
        parts = urlsplit(url)
        if parts.netloc.lower() == host:
            return parts.scheme
    return None
