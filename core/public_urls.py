"""Where svc can be reached from outside right now: the public URLs of the tunnels that are
online (contract §13), as the runtime's reach holds them (`tunnel name → URL`). Share URLs go
out on the first of them."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit


def public_urls(online: Mapping[str, str]) -> list[str]:
    """The public URLs of online tunnels, in name order."""
    return [url for _, url in sorted(online.items()) if url]


def share_base(online: Mapping[str, str]) -> str | None:
    urls = public_urls(online)
    return urls[0].rstrip("/") if urls else None


def scheme_for_host(online: Mapping[str, str], host_header: str) -> str | None:
    host = host_header.strip().lower()
    for url in public_urls(online):
        parts = urlsplit(url)
        if parts.netloc.lower() == host:
            return parts.scheme
    return None
