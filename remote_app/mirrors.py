"""settings.json's `tunnels` mirrored into the Tunnel table (contract §1, §13)."""

from __future__ import annotations

from django.db import transaction

from core import config
from core.mirror_rows import declared_entry, mirror_rows
from remote_app.models import Tunnel


@transaction.atomic
def tunnels_sync(settings: config.Settings) -> None:
    declared = settings.raw.get("tunnels") or {}
    wanted = {}
    for name in declared:
        entry = declared_entry(declared, name)
        port = entry.get("port")
        wanted[name] = {
            "kind": str(entry.get("provider", "")),
            "target_port": port if isinstance(port, int) else None,
        }
    mirror_rows(Tunnel, wanted, Tunnel.objects.all())
