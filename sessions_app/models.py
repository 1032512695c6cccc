"""Sessions, workspaces, handover codes, agents (mirror), subagent turns, channels and tunnels."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

from django.db import models
from django.utils import timezone


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


class Workspace(models.Model):
    path = models.CharField(max_length=4096, unique=True)
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["path"]

    def __str__(self) -> str:
        return self.name or self.path

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.pk,
            "path": self.path,
            "name": self.name,
            "created_at": _iso(self.created_at),
        }


class SessionDict(TypedDict):
    id: str
    agent: str
    workspace: str
    profile_id: str
    kind: str
    status: str
    exit_code: int | None
    ended_by: str
    pid: int | None
    title: str
    created_at: str | None
    updated_at: str | None
    ended_at: str | None
    agent_session_id: str
    end_reason: str


class Session(models.Model):
    class Kind(models.TextChoices):
        TERMINAL = "terminal"
        CHAT = "chat"
        SUBAGENT = "subagent"
        API = "api"

    class Status(models.TextChoices):
        STARTING = "starting"
        RUNNING = "running"
        EXITED = "exited"
        FAILED = "failed"

    class EndedBy(models.TextChoices):
        """Who ended a session, when it was not its process on its own (blank)."""

        UNKNOWN = "", "its process ended"
        SVC = "svc", "stopped when svc stopped"
        USER = "user", "stopped by you"

    LIVE = (Status.STARTING, Status.RUNNING)
    TITLE_MAX = 200

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.CharField(max_length=64)
    workspace = models.CharField(max_length=4096)
    profile_id = models.CharField(max_length=64, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.TERMINAL)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.STARTING)
    exit_code = models.IntegerField(null=True, blank=True)
    ended_by = models.CharField(max_length=8, choices=EndedBy.choices, default="", blank=True)
    pid = models.IntegerField(null=True, blank=True)
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    agent_session_id = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status"]), models.Index(fields=["agent", "workspace"])]

    def __str__(self) -> str:
        return f"{self.agent} {self.kind} {self.id}"

    @property
    def is_live(self) -> bool:
        return self.status in self.LIVE

    def mark_running(self, pid: int | None) -> None:
        if self.status != self.Status.STARTING:
            raise ValueError(f"session {self.id} is {self.status}, cannot start running")
        self.status, self.pid = self.Status.RUNNING, pid

    def mark_resumed(self, pid: int | None, agent_session_id: str) -> None:
        """A chat whose agent was restarted (and reloaded its own session) is live again."""
        if self.kind == self.Kind.TERMINAL:
            raise ValueError("a terminal cannot be resumed: its PTY is gone")
        self.status, self.pid, self.agent_session_id = self.Status.RUNNING, pid, agent_session_id
        self.exit_code = self.ended_at = None
        self.ended_by = self.EndedBy.UNKNOWN

    def mark_exited(
        self, exit_code: int | None, *, failed: bool = False, ended_by: str = ""
    ) -> bool:
        """Ends the session once; a second end (reaper and stop racing) changes nothing.
        `ended_by`: who stopped it (svc at its shutdown, the user), blank when it ended itself."""
        if not self.is_live:
            return False
        self.status = self.Status.FAILED if failed else self.Status.EXITED
        self.exit_code = exit_code
        self.ended_by = ended_by
        self.ended_at = timezone.now()
        return True

    @property
    def end_reason(self) -> str:
        """What the sessions list says of an ended session: who stopped it, else its code."""
        if self.is_live:
            return ""
        if self.ended_by:
            return self.EndedBy(self.ended_by).label
        if self.exit_code is not None:
            return f"{self.status} with code {self.exit_code}"
        return str(self.status)

    def to_dict(self) -> SessionDict:
        return {
            "id": str(self.id),
            "agent": self.agent,
            "workspace": self.workspace,
            "profile_id": self.profile_id,
            "kind": self.kind,
            "status": self.status,
            "exit_code": self.exit_code,
            "ended_by": self.ended_by,
            "end_reason": self.end_reason,
            "pid": self.pid,
            "title": self.title,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "ended_at": _iso(self.ended_at),
            "agent_session_id": self.agent_session_id,
        }


class HandoverCode(models.Model):
    code = models.CharField(max_length=4, db_index=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="handover_codes")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.code} → {self.session_id}"

    def is_live(self, now: Any = None) -> bool:
        return self.used_at is None and self.expires_at > (now or timezone.now())


class Agent(models.Model):
    """Mirror of the agent table (built-ins merged with settings.json) for admin and /api/."""

    name = models.CharField(max_length=64, primary_key=True)
    builtin = models.BooleanField(default=False)
    command = models.JSONField(default=list, blank=True)
    acp_command = models.JSONField(default=list, blank=True)
    enabled = models.BooleanField(default=False)
    executable_found = models.BooleanField(default=False)
    source = models.CharField(max_length=16, default="builtin")  # builtin | settings | both
    synced_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "builtin": self.builtin,
            "command": self.command,
            "acp_command": self.acp_command,
            "enabled": self.enabled,
            "executable_found": self.executable_found,
            "source": self.source,
        }


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
        ordering = ["turn", "position"]

    def __str__(self) -> str:
        return f"{self.name} ({self.agent})"


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


class Tunnel(models.Model):
    name = models.CharField(max_length=64, primary_key=True)
    kind = models.CharField(max_length=32, blank=True)
    target_port = models.PositiveIntegerField(null=True, blank=True)
    public_url = models.CharField(max_length=2048, blank=True)
    status = models.CharField(max_length=32, default="stopped")
    pid = models.IntegerField(null=True, blank=True)
    config = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "target_port": self.target_port,
            "public_url": self.public_url,
            "status": self.status,
            "pid": self.pid,
            "updated_at": _iso(self.updated_at),
        }


class SessionEvent(models.Model):
    """One chat event of an ACP session (prompt, chunk, tool call, turn end…), kept for replay."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=32)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="event_seq_unique")]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.kind}"
