"""Live lists (SPEC §7): the four snapshots and the broadcast that tells subscribers to re-send.

A broadcast carries no data: subscribers re-read the whole list, so a dropped or coalesced message
can never leave a client on a stale state as long as one message arrives after the last commit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

LIST_NAMES = ("sessions", "channels", "tunnels", "agents_runtime")


def group_name(list_name: str) -> str:
    return f"lists.{list_name}"


async def abroadcast(list_name: str) -> None:
    layer = get_channel_layer()
    if layer is not None:
        await layer.group_send(group_name(list_name), {"type": "list.changed"})


def broadcast_now(list_name: str) -> None:
    async_to_sync(abroadcast)(list_name)


def broadcast_on_commit(list_name: str) -> None:
    """From sync code inside or outside a transaction: send once the change is visible."""
    transaction.on_commit(lambda: broadcast_now(list_name))


def snapshot(list_name: str) -> list[dict[str, Any]]:
    from sessions_app import selectors

    readers: dict[str, Callable[[], list[dict[str, Any]]]] = {
        "sessions": selectors.session_list_dicts,
        "channels": selectors.channel_list_dicts,
        "tunnels": selectors.tunnel_list_dicts,
        "agents_runtime": selectors.agents_runtime_dicts,
    }
    return readers[list_name]()
