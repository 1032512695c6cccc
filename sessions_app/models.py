"""Sessions, workspaces, handover codes, agents (mirror) and chat history."""

from __future__ import annotations

import uuid
from pathlib import PurePath
from typing import Any, TypedDict

from django.db import models
from django.utils import timezone

from sessions_app import agents as agent_registry


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
    title_by: str
    name: str
    created_at: str | None
    updated_at: str | None
    ended_at: str | None
    agent_session_id: str
    end_reason: str
    detail: str


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
        # Its process went while no svc held it (a reboot, the holder killed): resumable (§17).
        INTERRUPTED = "interrupted", "interrupted: its process is gone; resume it"

    LIVE = (Status.STARTING, Status.RUNNING)
    TITLE_MAX = 200

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.CharField(max_length=64)
    workspace = models.CharField(max_length=4096)
    profile_id = models.CharField(max_length=64, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.TERMINAL)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.STARTING)
    exit_code = models.IntegerField(null=True, blank=True)
    ended_by = models.CharField(max_length=16, choices=EndedBy.choices, default="", blank=True)
    # A sentence for people on why it ended (an agent's last stderr lines, what interrupted it).
    detail = models.TextField(blank=True, default="")
    pid = models.IntegerField(null=True, blank=True)
    title = models.CharField(max_length=200, blank=True)
    # Who gave `title` (sessions_app/services/naming.py): "" none yet, prompt, agent or user.
    title_by = models.CharField(max_length=8, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    agent_session_id = models.CharField(max_length=200, blank=True)
    # svc's HMAC of what it was started with (sessions_app/seals.py): only a session svc started
    # with this agent in this workspace is started again.
    seal = models.CharField(max_length=64, blank=True, default="", db_default="")

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
        """A session whose process was started again (a chat reloading its agent's own session,
        a terminal with its old scrollback) is live again, under the same id."""
        self.status, self.pid, self.agent_session_id = self.Status.RUNNING, pid, agent_session_id
        self.exit_code = self.ended_at = None
        self.ended_by = self.EndedBy.UNKNOWN
        self.detail = ""

    def mark_exited(
        self,
        exit_code: int | None,
        *,
        failed: bool = False,
        ended_by: str = "",
        detail: str = "",
    ) -> bool:
        """Ends the session once; a second end (reaper and stop racing) changes nothing.
        `ended_by`: who stopped it (svc at its shutdown, the user), `interrupted` when its
        process went while svc was away, blank when it ended itself."""
        if not self.is_live:
            return False
        self.status = self.Status.FAILED if failed else self.Status.EXITED
        self.exit_code = exit_code
        self.ended_by = ended_by
        self.detail = detail or self.detail
        self.ended_at = timezone.now()
        return True

    # How an ended session ended, as a machine value (contract §17); `detail` says it to people.
    END_REASONS = {
        EndedBy.SVC: "svc_stopped",
        EndedBy.USER: "stopped",
        EndedBy.INTERRUPTED: "interrupted",
    }

    @property
    def end_reason(self) -> str:
        """Empty while live; else stopped | svc_stopped | interrupted | failed | exited."""
        if self.is_live:
            return ""
        if self.ended_by:
            return self.END_REASONS[self.EndedBy(self.ended_by)]
        return str(self.status)

    @property
    def end_text(self) -> str:
        """How it ended, for people: `detail` when there is one, else who ended it or its code."""
        if self.is_live:
            return ""
        if self.detail:
            return self.detail
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
            "detail": self.end_text,
            "pid": self.pid,
            "title": self.title,
            "title_by": self.title_by,
            # What to call it: its title, else `<agent> in <folder>` (services/naming.py).
            "name": self.title or f"{self.agent} in {PurePath(self.workspace).name}",
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
    # svc's HMAC of the code, its session and expiry (sessions_app/seals.py): svc issued it.
    seal = models.CharField(max_length=64, blank=True, default="", db_default="")

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
            # How to install a built-in's CLI (None for others): computed, not mirrored.
            "install": agent_registry.install_hint(self.name) if self.builtin else None,
        }


class SessionEvent(models.Model):
    """One chat event of an ACP session (prompt, chunk, tool call, turn end…), kept for replay."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=32)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    # The offset of the agent's message it came from in the holder's journal (host/acp_link.py):
    # what a taken-back chat compares with so that nothing is stored twice.
    src = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="event_seq_unique")]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.kind}"


class Approval(models.Model):
    """One permission decision (contract §17): who decided what an agent asked, from where and
    when. Written from the stored `permission_resolved` event, in the transaction that stores
    it (sessions_app/approvals.py), so the record and the session's history never disagree."""

    class Surface(models.TextChoices):
        DASHBOARD = "dashboard"  # a /ws/chat client: the dashboard, on the main port or a phone
        TELEGRAM = "telegram"
        SLACK = "slack"
        API = "api"  # POST /api/sessions/{id}/permissions, or svc's own code
        POLICY = "policy"  # answered without asking: permission_mode, or nobody to ask
        CANCELLED = "cancelled"  # nobody answered in time, or the turn was cancelled

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Removing a session removes its history, and its approvals with it (a deliberate forget).
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="approvals")
    request_id = models.CharField(max_length=64, blank=True)  # blank: answered by policy
    seq = models.PositiveIntegerField()  # the permission_resolved event's, for a link to it
    agent = models.CharField(max_length=64)
    title = models.TextField(blank=True)
    kind = models.CharField(max_length=32, blank=True)  # the tool call's kind (edit, execute…)
    options = models.JSONField(default=list, blank=True)
    chosen = models.CharField(max_length=200, null=True, blank=True)  # an option_id, or none
    surface = models.CharField(max_length=16, choices=Surface.choices)
    who = models.CharField(max_length=300, blank=True)
    requested_at = models.DateTimeField()
    decided_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-decided_at"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="approval_event_unique")
        ]

    def __str__(self) -> str:
        return f"{self.title or 'an action'}: {self.chosen or 'refused'} ({self.surface})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "session_id": str(self.session_id),
            "agent": self.agent,
            "title": self.title,
            "kind": self.kind,
            "options": self.options,
            "chosen": self.chosen,
            "decided_by": {"surface": self.surface, "who": self.who},
            "requested_at": _iso(self.requested_at),
            "decided_at": _iso(self.decided_at),
            "request_id": self.request_id,
            "seq": self.seq,
        }


class QueuedPrompt(models.Model):
    """A prompt sent to a chat while a turn ran (contract §17): kept here until it is sent, so
    it survives a restart, and shown on every surface until then (sessions_app/prompt_queue.py).
    """

    class Source(models.TextChoices):
        DASHBOARD = "dashboard"  # a /ws/chat client: the dashboard, `bin/svc chat`, a phone
        TELEGRAM = "telegram"
        SLACK = "slack"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="queued")
    # The order it is sent in; "send now" puts a prompt before the others.
    position = models.BigIntegerField()
    text = models.TextField()
    source = models.CharField(max_length=16, choices=Source.choices)
    who = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # svc's HMAC of the prompt (sessions_app/seals.py): a row svc did not write is never sent.
    seal = models.CharField(max_length=64, blank=True, default="", db_default="")

    class Meta:
        ordering = ["session", "position"]

    def __str__(self) -> str:
        return f"{self.session_id} #{self.position}: {self.text[:40]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "source": self.source,
            "who": self.who,
            "created_at": self.created_at.isoformat(),
        }


class PromptKey(models.Model):
    """A prompt's key, as its client gave it (`key` of a /ws/chat prompt): the same key again
    for the same session is not sent again. A fleet member passing on a chat app's message
    sends it until the owner confirms it; one that restarts before hearing so sends it again
    (sessions_app/prompt_queue.py). Kept KEY_DAYS."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="prompt_keys")
    # The seal of who sent it (a member's id, or "client") and the key (sessions_app/seals.py).
    key = models.CharField(max_length=300)
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "key"], name="prompt_key_once"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.key}"
