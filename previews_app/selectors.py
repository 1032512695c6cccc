"""Reads for previews: lookups by slug and share slug, and the URLs a preview is reached at."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from urllib.parse import urlsplit

from django.utils import timezone

from core import browser, config, row_seal
from previews_app.models import Preview

ShareState = Literal["ok", "expired", "missing"]
SHARE = "preview share"


def preview_list() -> list[Preview]:
    return list(Preview.objects.all())


def preview_get(slug: str) -> Preview | None:
    return Preview.objects.filter(slug=slug).first()


def port_preview_get(slug: str) -> Preview | None:
    return Preview.objects.filter(slug=slug, kind=Preview.Kind.PORT).first()


def file_preview_get(slug: str) -> Preview | None:
    return Preview.objects.filter(slug=slug, kind=Preview.Kind.FILE).first()


def _share_fields(preview: Preview) -> tuple:
    return (preview.share_slug, preview.kind, preview.port, preview.share_expires_at)


def share_seal(preview: Preview) -> str:
    """A share lets anyone read a local port without a login: only one svc published counts
    (core/row_seal.py), never a share slug, port or expiry written into the database."""
    return row_seal.seal(SHARE, *_share_fields(preview))


def share_lookup(share_slug: str, now: datetime | None = None) -> tuple[ShareState, Preview | None]:
    """The preview behind a share slug and whether it may still be served (600 s from publish).
    Only the share slug column is consulted, so an owner slug never opens a share; a share svc
    did not publish (its seal does not verify) is missing."""
    if not share_slug:
        return "missing", None
    preview = Preview.objects.filter(share_slug=share_slug, kind=Preview.Kind.PORT).first()
    if preview is None:
        return "missing", None
    if not row_seal.sealed(SHARE, preview.share_seal, *_share_fields(preview)):
        row_seal.refused(SHARE, preview.slug, "nothing was served through it")
        return "missing", None
    expires = preview.share_expires_at
    if expires is None or (now or timezone.now()) >= expires:
        return "expired", preview
    return "ok", preview


def preview_urls(preview: Preview, base: str, outside: str | None = None) -> dict[str, str | None]:
    """Absolute URLs. Owner URLs are on the dashboard host, where the owner's browser session
    is; the share URL on `base` (e.g. http://127.0.0.1:8000), since it needs no login — or, while
    a tunnel is online, on its public URL `outside`, with the loopback one as `local_share_url`
    (§13)."""
    owner = browser.browser_base(urlsplit(base).port)
    if preview.kind == Preview.Kind.FILE:
        return {"owner_url": f"{owner}/md-preview/{preview.slug}", "share_url": None}
    path = f"/preview/s/{preview.share_slug}/" if preview.share_slug else None
    local = f"{base}{path}" if path else None
    return {
        "owner_url": f"{owner}/preview/u/{preview.slug}/",
        "share_url": f"{outside}{path}" if outside and path else local,
        "local_share_url": local,
    }


def preview_links(
    preview: Preview, base: str = "", outside: str | None = None
) -> dict[str, str | None]:
    """What the MCP tools answer: `preview` → slug, owner_url, share_url, share_expires_at,
    and `warning` when preview_publish found nothing listening on the port (as POST
    /api/previews says it); `md_preview` → slug, owner_url. `base` defaults to svc's loopback
    address."""
    base = base or f"http://127.0.0.1:{config.svc_port()}"
    urls = preview_urls(preview, base, outside)
    links: dict[str, str | None] = {"slug": preview.slug, "owner_url": urls["owner_url"]}
    if preview.kind == Preview.Kind.PORT:
        expires = preview.share_expires_at
        links["share_url"] = urls["share_url"]
        links["local_share_url"] = urls["local_share_url"]
        links["share_expires_at"] = expires.isoformat() if expires else None
        if warning := getattr(preview, "warning", None):
            links["warning"] = warning
    return links
