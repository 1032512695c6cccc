"""Admin for remote access (contract §3): pairing requests, paired devices and invites. Codes,
cookies and secrets are never shown: only their hashes are stored, and those are left out too.
Pairings are sealed (remote_app/seals.py): read and revoked here, never added or changed."""

from django.contrib import admin

from core.sealed_admin import SealedRowAdmin
from remote_app.models import (
    PairedDevice,
    PairingInvite,
    PairingRequest,
    Tunnel,
    WrongPairingCode,
)


@admin.register(PairingRequest)
class PairingRequestAdmin(SealedRowAdmin):
    list_display = ("created_at", "status", "approved_via", "invited", "device", "host")
    list_filter = ("status", "invited", "approved_via")
    search_fields = ("device", "host")
    exclude = ("pair_id", "code", "seal")


@admin.register(PairedDevice)
class PairedDeviceAdmin(SealedRowAdmin):
    list_display = ("id", "device", "host", "first_seen", "last_seen")
    search_fields = ("id", "device", "host")
    exclude = ("cookie_hash", "page_key", "token_fingerprint", "seal")


@admin.register(PairingInvite)
class PairingInviteAdmin(SealedRowAdmin):
    list_display = ("created_at", "expires_at", "used_at")
    list_filter = ("used_at",)
    exclude = ("secret_hash", "seal")


@admin.register(Tunnel)
class TunnelAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "target_port", "public_url", "status", "updated_at")
    list_filter = ("kind", "status")
    search_fields = ("name", "public_url")


@admin.register(WrongPairingCode)
class WrongPairingCodeAdmin(admin.ModelAdmin):
    list_display = ("at", "surface")
    list_filter = ("surface",)
