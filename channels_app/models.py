"""Chat channels (contract §14): which session each chat is on, and which platform events were
already handled (so a redelivered update — a reconnect, a restart before the platform heard the
ack — is never answered twice)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class ChannelChat(models.Model):
    """One chat of a channel (a Telegram chat; a Slack channel or thread), its current session."""

    channel = models.CharField(max_length=32)
    chat_key = models.CharField(max_length=200)
    session_id = models.CharField(max_length=64, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["channel", "chat_key"], name="channel_chat_unique")
        ]


class HandledEvent(models.Model):
    """A platform event (Telegram update id, Slack envelope or message ts) already taken in."""

    channel = models.CharField(max_length=32)
    event_id = models.CharField(max_length=200)
    at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["channel", "event_id"], name="handled_event_unique")
        ]
