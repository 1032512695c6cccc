"""Subagent turns and their subagents (contract §4). The rows were sessions_app's: their tables
keep their names (moved with SeparateDatabaseAndState, migrations/0001_initial.py)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from sessions_app.models import Session


class SubagentTurn(models.Model):
    class Mode(models.TextChoices):
        PARALLEL = "parallel"
        COLLABORATION = "collaboration"
        BRAINSTORMING = "brainstorming"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    mode = models.CharField(max_length=16, choices=Mode.choices)
    cwd = models.CharField(max_length=4096)
    task = models.TextField(blank=True)
    parent_session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="subagent_turns"
    )
    status = models.CharField(max_length=16, default="running")  # running | completed | cancelled
    # The repository the worktrees were made from, and its HEAD then (empty: no worktrees).
    repo = models.CharField(max_length=4096, blank=True)
    base_commit = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "sessions_app_subagentturn"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.mode} turn {self.id}"


class Subagent(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    turn = models.ForeignKey(SubagentTurn, on_delete=models.CASCADE, related_name="subagents")
    position = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=64)
    agent = models.CharField(max_length=64)
    task = models.TextField(blank=True)
    profile_id = models.CharField(max_length=64, blank=True)
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL)
    workspace = models.CharField(max_length=4096, blank=True)
    branch = models.CharField(max_length=255, blank=True)
    # pending → starting → running → done | failed | cancelled
    status = models.CharField(max_length=16, default="pending")
    summary = models.TextField(blank=True)
    report = models.JSONField(null=True, blank=True)
    final_message = models.TextField(blank=True)
    changes = models.JSONField(null=True, blank=True)  # measured by svc with git
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "sessions_app_subagent"
        ordering = ["turn", "position"]

    def __str__(self) -> str:
        return f"{self.name} ({self.agent})"
