"""Notifications (contract §15): what was sent, to which target, and how it went.

A notification is recorded with one delivery row per target in the same transaction; each
delivery ends `sent` or `failed` exactly once, and the unique (notification, target) pair keeps
a target from getting the same notification twice. Push subscriptions are the browsers that
asked for Web Push.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import models
from django.utils import timezone


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


class Notification(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    event = models.CharField(max_length=40)
    session_id = models.CharField(max_length=64, null=True, blank=True)
    agent = models.CharField(max_length=64, blank=True)
    title = models.CharField(max_length=200)
    body = models.TextField(blank=True)
    url = models.CharField(max_length=2048, blank=True)  # the link to the session
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # A fleet's (contract §18): the machine whose event this is, when this member delivered it
    # to its own devices for another member; "" for this member's own.
    origin = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.event}: {self.title}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "event": self.event,
            "session_id": self.session_id,
            "agent": self.agent,
            "title": self.title,
            "body": self.body,
            "url": self.url,
            "created_at": _iso(self.created_at),
            "origin": self.origin,
        }


class Delivery(models.Model):
    """One notification to one target: the notifier's outbox (contract §17). `pending` while it
    is being sent or waits (`next_at`) for a target that could not be reached; `sent` once; or
    `failed` — the target refused it, or 24 h after `created_at` it still could not be reached.
    Pending rows outlive a restart of svc: the next run goes on trying them."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    notification = models.ForeignKey(
        Notification, on_delete=models.CASCADE, related_name="deliveries"
    )
    # "dashboard", "webpush:<subscription id>", "apprise:<index>", "channel:<name>"
    target = models.CharField(max_length=100)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)  # one line, never a URL's secrets
    created_at = models.DateTimeField(default=timezone.now)
    # When a delivery that could not reach its target is tried again (None: being sent now).
    next_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["notification", "target"], name="delivered_once")
        ]
        indexes = [models.Index(fields=["status"])]

    def __str__(self) -> str:
        return f"{self.target}: {self.status}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "status": self.status,
            "attempts": self.attempts,
            "error": self.error,
            "created_at": _iso(self.created_at),
            "next_at": _iso(self.next_at) if self.status == self.Status.PENDING else None,
            "updated_at": _iso(self.updated_at),
        }


class PushSubscription(models.Model):
    """A browser's PushManager subscription: the push service's endpoint (a capability URL,
    never shown) and the keys its payloads are encrypted to (RFC 8291)."""

    endpoint = models.CharField(max_length=2048, unique=True)
    p256dh = models.CharField(max_length=100)
    auth = models.CharField(max_length=40)
    user_agent = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"push subscription {self.pk}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.pk, "user_agent": self.user_agent, "created_at": _iso(self.created_at)}
