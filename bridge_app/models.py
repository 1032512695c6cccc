"""Profiles (a mirror of settings.json that never holds a key), conversations, request log."""

from __future__ import annotations

import os
from typing import Any

from django.db import models
from django.utils import timezone


class Profile(models.Model):
    id = models.CharField(max_length=64, primary_key=True)
    provider = models.CharField(max_length=32)
    base_url = models.CharField(max_length=2048)
    model_ids = models.JSONField(default=list, blank=True)
    model_aliases = models.JSONField(default=dict, blank=True)
    capabilities = models.JSONField(default=dict, blank=True)
    # Where the key comes from ("settings.json", "env:NAME", "none"): the key itself never
    # reaches the database, so no admin page or API can show it.
    key_source = models.CharField(max_length=128, default="none")
    synced_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.id

    def key_status(self) -> dict[str, Any]:
        """Where the key comes from and whether svc has it, never the key: `source` is
        "settings.json", "env" (with `env`, the variable's name, and `set`, whether it is set and
        non-empty in svc's own environment, read now) or "none"."""
        if self.key_source.startswith("env:"):
            name = self.key_source.removeprefix("env:")
            return {"source": "env", "env": name, "set": bool(os.environ.get(name))}
        if self.key_source == "settings.json":
            return {"source": "settings.json", "set": True}
        return {"source": "none", "set": False}

    def to_dict(self) -> dict[str, Any]:
        key = self.key_status()
        return {
            "id": self.id,
            "provider": self.provider,
            "base_url": self.base_url,
            "models": self.model_ids,
            "model_aliases": self.model_aliases,
            "capabilities": self.capabilities,
            "api_key": "[redacted]" if key["set"] else None,
            "key_source": self.key_source,
            "key": key,
        }


class Conversation(models.Model):
    """One agent session per X-Svc-Conversation key on /svc/local-agent."""

    key = models.CharField(max_length=200)
    agent = models.CharField(max_length=64)
    profile_id = models.CharField(max_length=64)
    session = models.ForeignKey(
        "sessions_app.Session", null=True, blank=True, on_delete=models.SET_NULL
    )
    messages_seen = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["key", "agent", "profile_id"], name="conversation_key")
        ]

    def __str__(self) -> str:
        return f"{self.agent}/{self.key}"


class BridgeRequest(models.Model):
    """What went through the bridge (never bodies or keys): for admin and debugging."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    route = models.CharField(max_length=16)  # local-api | local-agent | legacy
    profile_id = models.CharField(max_length=64)
    scope = models.CharField(max_length=128, blank=True)
    client_dialect = models.CharField(max_length=32)
    provider = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=200, blank=True)
    stream = models.BooleanField(default=False)
    status = models.PositiveSmallIntegerField(default=0)
    duration_ms = models.FloatField(default=0)
    # Usage (§16), as the provider reported it: input includes cached input, output includes
    # reasoning. `upstream_model` is the id prices are keyed by; `cost_usd` is null unpriced.
    upstream_model = models.CharField(max_length=200, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_input_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(null=True, blank=True)
    # Attribution: the hosted session named by the scope (`s-<session id>`), its subagent turn.
    session_id = models.CharField(max_length=36, blank=True, db_index=True)
    turn_id = models.CharField(max_length=36, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.client_dialect}→{self.provider} {self.model} {self.status}"
