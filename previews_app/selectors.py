"""Reads for previews: lookups by slug and share slug, and the URLs a preview is reached at."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.utils import timezone

from previews_app.models import Preview

ShareState = Literal["ok", "expired", "missing"]


def preview_list() -> list[Preview]:
    return list(Preview.objects.all())


def preview_get(slug: str) -> Preview | None:
    return Preview.objects.filter(slug=slug).first()


def port_preview_get(slug: str) -> Preview | None:
    return Preview.objects.filter(slug=slug, kind=Preview.Kind.PORT).first()


def file_preview_get(slug: str) -> Preview | None:
    return Preview.objects.filter(slug=slug, kind=Preview.Kind.FILE).first()


def share_lookup(share_slug: str, now: datetime | None = None) -> tuple[ShareState, Preview | None]:
    """The preview behind a share slug and whether it may still be served (600 s from publish).
    Only the share slug column is consulted, so an owner slug never opens a share."""
    if not share_slug:
        return "missing", None
    preview = Preview.objects.filter(share_slug=share_slug, kind=Preview.Kind.PORT).first()
    if preview is None:
        return "missing", None
    expires = preview.share_expires_at
    if expires is None or (now or timezone.now()) >= expires:
        return "expired", preview
    return "ok", preview


def preview_urls(preview: Preview, base: str) -> dict[str, str | None]:
    """Absolute URLs on svc's own origin (`base`, e.g. http://127.0.0.1:8000)."""
    if preview.kind == Preview.Kind.FILE:
        return {"owner_url": f"{base}/md-preview/{preview.slug}", "share_url": None}
    share = f"{base}/preview/s/{preview.share_slug}/" if preview.share_slug else None
    return {"owner_url": f"{base}/preview/u/{preview.slug}/", "share_url": share}
