"""Remote access (contract §13): pairing requests, paired devices, and wrong codes.

All three live in the database, not in the daemon's memory: `manage.py pair CODE` approves from
another process, the wrong-code limit counts every surface together, and a paired phone stays
paired across a restart.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from core.devices import NAME_MAX, readable_name


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


class PairingRequest(models.Model):
    """A browser asking to be paired: shows `code` to its person, who enters it on a trusted
    surface. The browser's secret handle on the request is kept as its SHA-256 in `pair_id`, so
    whoever reads the database cannot ask for the cookie of someone else's approval."""

    pair_id = models.CharField(max_length=64, primary_key=True)
    code = models.CharField(max_length=6, db_index=True)
    device = models.CharField(max_length=300, blank=True)  # the browser's User-Agent
    host = models.CharField(max_length=300, blank=True)  # the Host it asked through
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    status = models.CharField(max_length=16, default="pending")  # pending|approved|denied|expired
    approved_via = models.CharField(max_length=32, blank=True)
    # The device made on approval; its cookie is handed to the first status call that sees it.
    paired = models.OneToOneField(
        "PairedDevice", null=True, blank=True, on_delete=models.CASCADE, related_name="request"
    )
    cookie_sent = models.BooleanField(default=False)
    invited = models.BooleanField(default=False)  # opened an invite: approved, counts nowhere
    # svc's HMAC of the fields that grant (remote_app/seals.py): a row svc did not write as it
    # is — an approval flipped by SQL — hands out nothing.
    seal = models.CharField(max_length=64, blank=True, default="", db_default="")

    class Meta:
        ordering = ["created_at"]

    def to_dict(self) -> dict[str, Any]:
        """What the trusted surfaces see of a pending request: never the code; a prefix of the
        handle's hash as its id (what Deny names)."""
        return {
            "id": self.pair_id[:8],
            "device": self.device,
            "host": self.host,
            "created_at": _iso(self.created_at),
            "expires_at": _iso(self.expires_at),
        }


class PairedDevice(models.Model):
    """A browser allowed in through the remote listener. The cookie it holds is a random id and
    its MAC; only its SHA-256 is stored, so a copy of the database opens nothing, and the row is
    sealed, so a row written into the database opens nothing either."""

    id = models.CharField(max_length=16, primary_key=True)
    cookie_hash = models.CharField(max_length=64, unique=True)
    # Carried by the dashboard page only, required on /api/ and /ws (docs/remote.md: a
    # previewed page on the same origin holds the cookie but never this).
    page_key = models.CharField(max_length=64)
    device = models.CharField(max_length=300, blank=True)
    host = models.CharField(max_length=300, blank=True)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)
    token_fingerprint = models.CharField(max_length=64)  # the owner token in force when paired
    # svc's HMAC of the four fields above that let a browser in (remote_app/seals.py).
    seal = models.CharField(max_length=64, blank=True, default="", db_default="")
    # What the owner's list calls it: its readable name when paired (remote_app/device_names.py),
    # or what it was renamed to; "" for a device paired before names (its readable name is shown).
    # Not sealed: a name lets nobody in, and the list always shows `browser` beside it.
    name = models.CharField(max_length=NAME_MAX, blank=True, default="", db_default="")

    class Meta:
        ordering = ["first_seen"]

    def __str__(self) -> str:
        return f"{self.id} ({self.name or self.device[:40]})"

    def to_dict(self) -> dict[str, Any]:
        browser = readable_name(self.device)
        return {
            "id": self.id,
            "name": self.name or browser,
            "browser": browser,  # from its User-Agent whatever its name: a rename hides nothing
            "device": self.device,
            "host": self.host,
            "first_seen": _iso(self.first_seen),
            "last_seen": _iso(self.last_seen),
        }


class WrongPairingCode(models.Model):
    """One wrong code entered on any surface; more than the limit a minute → 429 (§11)."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    surface = models.CharField(max_length=32, blank=True)


class PairingInvite(models.Model):
    """An invite to pair one browser, made by the owner on a trusted surface: the browser that
    opens its link is paired without a code (docs/remote.md). Only the secret's hash is kept."""

    secret_hash = models.CharField(max_length=64, primary_key=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    # svc's HMAC of the secret's hash and expiry (remote_app/seals.py): svc made this invite.
    seal = models.CharField(max_length=64, blank=True, default="", db_default="")


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
        db_table = "sessions_app_tunnel"
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
