"""Reads for the `/ws/pairings` list (an extension of contract §7, docs/remote.md): pending
pairing requests, then paired devices, each row with its `kind`."""

from __future__ import annotations

from typing import Any

from remote_app import pairing


def pairing_list_dicts() -> list[dict[str, Any]]:
    pending = [{"kind": "request", **row} for row in pairing.pending_list()]
    return pending + [{"kind": "device", **row} for row in pairing.devices_list()]
