"""A paired device's name (docs/remote.md "Device names"): when it pairs, its readable name from
its User-Agent (core/devices.py), numbered when another device already has that name — two
phones of one model and browser send the same User-Agent; then whatever the owner, or the device
itself, renames it to."""

from __future__ import annotations

from django.db import transaction

from core import live
from core.devices import NAME_MAX, readable_name
from core.errors import DomainError, NotFound
from remote_app import seals
from remote_app.models import PairedDevice

NOT_THIS_DEVICE = (
    "a paired device may rename only itself: rename other devices on svc's own machine (its "
    "dashboard, or bin/svc there)"
)


def first_name(user_agent: str) -> str:
    """The name a device gets when it pairs: its readable name, or "… (2)", "… (3)" after it."""
    base = readable_name(user_agent)
    taken = {device.to_dict()["name"] for device in PairedDevice.objects.all()}
    name, n = base, 2
    while name in taken:
        suffix = f" ({n})"
        name, n = base[: NAME_MAX - len(suffix)] + suffix, n + 1
    return name


@transaction.atomic
def device_rename(*, device_id: str, name: str, by_device: str = "") -> PairedDevice:
    """Gives the device `name` (one line, spaces collapsed; blank: its readable name again).
    `by_device` is the paired device asking through the remote listener ("" on svc's machine):
    it may rename only itself."""
    if by_device and by_device != device_id:
        raise DomainError(NOT_THIS_DEVICE, status=403, code="main_port_only")
    device = PairedDevice.objects.select_for_update().filter(pk=device_id).first()
    if device is None or not seals.device_sealed(device, log=False):
        raise NotFound(f"no paired device {device_id!r}")
    device.name = " ".join(name.split())[:NAME_MAX]
    device.save(update_fields=["name"])
    live.broadcast_on_commit("pairings")
    return device
