"""Live dev-server previews and Markdown previews."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone


class Preview(models.Model):
    class Kind(models.TextChoices):
        PORT = "port"
        FILE = "file"

    slug = models.CharField(max_length=80, unique=True)
    share_slug = models.CharField(max_length=64, unique=True, null=True, blank=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    port = models.PositiveIntegerField(null=True, blank=True)
    file = models.CharField(max_length=4096, blank=True)
    workspace = models.CharField(max_length=4096)
    title = models.CharField(max_length=200, blank=True)
    session = models.ForeignKey(
        "sessions_app.Session", null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    share_expires_at = models.DateTimeField(null=True, blank=True)
    # svc's HMAC of the share (previews_app/selectors.py): a share slug written into the database
    # opens nothing.
    share_seal = models.CharField(max_length=64, blank=True, default="", db_default="")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "port"]), models.Index(fields=["file"])]

    def __str__(self) -> str:
        return self.title or self.slug

    def to_dict(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "kind": self.kind,
            "port": self.port,
            "file": self.file,
            "workspace": self.workspace,
            "title": self.title,
            "session_id": str(self.session_id) if self.session_id else None,
            "created_at": self.created_at.isoformat(),
            "share_expires_at": (
                self.share_expires_at.isoformat() if self.share_expires_at else None
            ),
        }
