"""settings.json's `channels` mirrored into the Channel table (contract §1, §14)."""

from __future__ import annotations

from django.db import transaction

from channels_app.models import Channel
from core import config
from core.mirror_rows import declared_entry, mirror_rows


@transaction.atomic
def channels_sync(settings: config.Settings) -> None:
    """The built-in `web` channel plus those settings.json declares (kind and enabled only:
    channel entries may hold secrets, which stay in the file)."""
    declared = settings.raw.get("channels") or {}
    wanted = {"web": {"kind": "web", "builtin": True, "enabled": True}}
    for name in declared:
        entry = declared_entry(declared, name)
        wanted[name] = {
            "kind": str(entry.get("kind", name)),
            "enabled": entry.get("enabled", True) is not False,
            "builtin": name == "web",
        }
    mirror_rows(Channel, wanted, Channel.objects.all())
