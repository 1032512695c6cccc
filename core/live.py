"""Live lists (contract §7): each list's snapshot and the broadcast telling its clients to re-send.

Apps plug their lists in (`register`, from their `AppConfig.ready()`): a name, a reader that
builds the list (given the daemon's parts: lists such as tunnels show what is running), and the
models whose every committed change pushes it. The registry is configuration, filled once at start
like Django's admin site; what lives — the shared snapshots — belongs to the runtime
(`Snapshots`).

A broadcast carries no data: clients re-read the whole list, so a dropped or coalesced message
can never leave a client on a stale state as long as one message arrives after the last commit.
"""

from __future__ import annotations

import asyncio
import collections
import json
import uuid
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models.signals import post_delete, post_save

Reader = Callable[[Any], list[dict[str, Any]]]  # the daemon's parts (or None) → the list's rows
Extender = Callable[[str, list[dict[str, Any]]], list[dict[str, Any]]]  # (list, rows) → rows
_readers: dict[str, Reader] = {}
_model_lists: dict[type, str] = {}


def register(name: str, reader: Reader, *, models: tuple[type, ...] = ()) -> None:
    """A live list named `name` (served at /ws/<name>); each committed save or delete of a row
    of `models` pushes it (QuerySet.update() and bulk writes send no signal: services that use
    them call broadcast_on_commit themselves)."""
    _readers[name] = reader
    for model in models:
        _model_lists[model] = name


def names() -> tuple[str, ...]:
    return tuple(_readers)


def snapshot(name: str, parts: Any = None) -> list[dict[str, Any]]:
    return _readers[name](parts)


def _push(sender: type, **kwargs: object) -> None:
    if (name := _model_lists.get(sender)) is not None:
        broadcast_on_commit(name)


post_save.connect(_push, dispatch_uid="core.live.push")
post_delete.connect(_push, dispatch_uid="core.live.push_delete")


def group_name(list_name: str) -> str:
    return f"lists.{list_name}"


async def abroadcast(list_name: str, *, elsewhere: bool = False) -> None:
    """Tell this process's clients of `list_name` to re-read it. `elsewhere`: the change is
    another member's (a fleet, contract §18), so whoever republishes this member's own rows
    when they change (fleet_app.lists) leaves it alone."""
    layer = get_channel_layer()
    if layer is not None:
        # The change id lets the clients of one process rebuild the snapshot once per change.
        message = {
            "type": "list.changed",
            "change": uuid.uuid4().hex,
            "list": list_name,
            "elsewhere": elsewhere,
        }
        await layer.group_send(group_name(list_name), message)


def broadcast_now(list_name: str) -> None:
    async_to_sync(abroadcast)(list_name)


def broadcast_on_commit(list_name: str) -> None:
    """From sync code inside or outside a transaction: send once the change is visible."""
    transaction.on_commit(lambda: broadcast_now(list_name))


class SharedSnapshot:
    """One list's JSON text, built once per change and shared by every client in the process.

    A change marks the snapshot stale (each change id counts once, however many clients hear
    of it); `text()` returns a snapshot built after the newest change it has heard of, so the
    last frame a client sends still equals the state — built by one database read, not one per
    client."""

    def __init__(self, list_name: str, parts: Any = None, extend: Extender | None = None) -> None:
        self.list_name, self.parts, self._extend = list_name, parts, extend
        self._wanted = self._built = 0
        self._frames: list[str] = []
        self._seen: collections.deque[str] = collections.deque(maxlen=256)
        self._building: asyncio.Future[None] | None = None

    def changed(self, change: str | None) -> None:
        if change is not None and change in self._seen:
            return
        if change is not None:
            self._seen.append(change)
        self._wanted += 1

    async def frames(self) -> list[str]:
        """The snapshot as the frames that carry it (`list_frames`)."""
        while self._built < self._wanted or not self._frames:
            if self._building is None:
                self._building = asyncio.ensure_future(self._build())
            await asyncio.shield(self._building)
        return self._frames

    async def text(self) -> str:
        """The whole list as one JSON array (readers in the process, not sockets)."""
        frames = await self.frames()
        if len(frames) == 1:
            return frames[0]
        return json.dumps([item for frame in frames for item in json.loads(frame)["items"]])

    async def _build(self) -> None:
        generation = self._wanted
        try:
            items = await database_sync_to_async(snapshot)(self.list_name, self.parts)
            if self._extend is not None:
                items = self._extend(self.list_name, items)
            self._frames, self._built = list_frames(items), max(generation, 1)
        finally:
            self._building = None


PAGE_BYTES = 512 << 10  # a list frame's most; what WebSocket clients take is 1 MiB


def list_frames(items: list[dict[str, Any]]) -> list[str]:
    """The frames that carry a list (contract §7): the JSON array itself when it fits in one
    (every list but a long one), else pages `{"part", "parts", "items"}` of at most PAGE_BYTES
    each, sent one after the other; the list is the items of parts 0…parts-1 together. daphne
    refuses to send a message over 1 MiB, which closed `/ws/sessions` (1011) past ~2,000
    sessions and left the dashboard empty."""
    text = json.dumps(items)
    if len(text) <= PAGE_BYTES:  # json.dumps escapes to ASCII: characters are bytes
        return [text]
    pages: list[list[str]] = [[]]
    size = 0
    for item in items:
        one = json.dumps(item)
        if pages[-1] and size + len(one) + 2 > PAGE_BYTES - 64:
            pages.append([])
            size = 0
        pages[-1].append(one)
        size += len(one) + 2
    return [
        f'{{"part": {i}, "parts": {len(pages)}, "items": [{", ".join(page)}]}}'
        for i, page in enumerate(pages)
    ]


class Snapshots:
    """Each list's shared snapshot, one set per runtime. `extend`, when a part sets it (a fleet
    member: the other members' rows, contract §18), turns this process's rows of a list into
    what its clients see."""

    def __init__(self) -> None:
        # What the readers are given: the daemon's parts (svcproject.parts.Parts), handed over
        # by the assembly once they are all built; None for a runtime alone (a test's).
        self.parts: Any = None
        self.extend: Extender | None = None
        self._shared: dict[str, SharedSnapshot] = {}

    def shared(self, list_name: str) -> SharedSnapshot:
        if list_name not in self._shared:
            self._shared[list_name] = SharedSnapshot(list_name, self.parts, self._extended)
        return self._shared[list_name]

    def _extended(self, list_name: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self.extend(list_name, rows) if self.extend is not None else rows
