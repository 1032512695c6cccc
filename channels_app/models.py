"""Chat channels (contract §14): the channels (mirrored from settings.json; the table keeps the
name it had in sessions_app), which session each chat is on, and which platform events were
already handled (so a redelivered update — a reconnect, a restart before the platform heard the
ack — is never answered twice)."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


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
    """A platform event (Telegram update id, Slack envelope or message ts): the channel's inbox.

    Recorded `taken`, with what it said (`payload`), before anything is done with it; `done` once
    it is handed over (a prompt to the agent, a command run, a reply sent); `failed` with the
    reason when its handling raised. A copy delivered again is handled only while its record is
    still `taken` and nothing in this process holds it (the run that took it stopped first), and
    at start a channel replays what a previous run took but never handed over: each event is
    handled exactly once, across restarts of the service and of svc (contract §17)."""

    TAKEN, DONE, FAILED = "taken", "done", "failed"

    channel = models.CharField(max_length=32)
    event_id = models.CharField(max_length=200)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    status = models.CharField(
        max_length=16,
        default=TAKEN,
        choices=[(TAKEN, "taken"), (DONE, "done"), (FAILED, "failed")],
    )
    error = models.CharField(max_length=500, blank=True)
    payload = models.JSONField(null=True, blank=True)  # {chat, user, text, files}: for a replay

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["channel", "event_id"], name="handled_event_unique")
        ]


class Channel(models.Model):
    """A place messages arrive from (the built-in `web` dashboard chat, or configured ones)."""

    name = models.CharField(max_length=64, primary_key=True)
    kind = models.CharField(max_length=32, default="web")
    builtin = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True)
    status = models.CharField(max_length=32, default="ready")
    config = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "sessions_app_channel"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "builtin": self.builtin,
            "enabled": self.enabled,
            "status": self.status,
            "updated_at": _iso(self.updated_at),
        }


class OutboxMessage(models.Model):
    """One message of a chat as svc wants the platform to show it: the channel's outbox
    (contract §17, "Nothing sent to svc is lost"; channels_app/outbox.py).

    Every send and edit is recorded here first and delivered from here. `pending` until the
    platform shows the row's text; `sent` once it does (`message_id` is then the platform's id,
    and a later edit makes the row pending again — delivered as an edit); `failed` when the
    platform refused it for good, or after 24 h of not reaching it (`pending_since`). An edit
    of a message not yet sent changes the pending row's text: only the last text is sent.
    Rows of a chat are delivered in the order they became pending (`pending_since`), the next
    only once the one before is delivered or failed, so a chat shows its messages and edits in
    the order svc made them."""

    PENDING, SENT, FAILED = "pending", "sent", "failed"

    channel = models.CharField(max_length=32)
    chat = models.CharField(max_length=200)  # the platform's chat key (Slack: channel:thread)
    text = models.TextField()
    buttons = models.JSONField(null=True, blank=True)  # [[label, data], ...]; [] removes them
    message_id = models.CharField(max_length=64, blank=True)  # the platform's, once sent
    status = models.CharField(
        max_length=8,
        default=PENDING,
        choices=[(PENDING, "pending"), (SENT, "sent"), (FAILED, "failed")],
    )
    version = models.PositiveIntegerField(default=0)  # +1 per edit: a send racing one keeps it
    attempts = models.PositiveIntegerField(default=0)  # since it last became pending
    next_at = models.DateTimeField(default=timezone.now)  # not tried again before
    error = models.CharField(max_length=300, blank=True)  # the last attempt's, one line
    created_at = models.DateTimeField(default=timezone.now)
    pending_since = models.DateTimeField(default=timezone.now)  # the 24 h count from here
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["channel", "status"], name="outbox_channel_status")]

    def to_dict(self) -> dict[str, Any]:
        """What the API and /ws/channels show of it: never its buttons' data."""
        return {
            "id": self.pk,
            "chat": self.chat,
            "text": self.text[:300],
            "status": self.status,
            "attempts": self.attempts,
            "error": self.error,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
        }
