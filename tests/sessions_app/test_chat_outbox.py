"""One /ws/chat socket's outbox (sessions_app/chat_outbox.py) opening a chat whose history is
longer than a page: the whole history first, then the open's `session` and `queue` events, then
what happened after the open — the order every client had before histories were paged."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sessions_app.chat_outbox import PAGE, ChatOutbox

SID = "s1"


class Store:
    """The chat's stored events, as the database gives them a page at a time."""

    def __init__(self, count: int) -> None:
        self.events = [self.event(seq) for seq in range(1, count + 1)]

    @staticmethod
    def event(seq: int) -> dict[str, Any]:
        return {"kind": "agent_message_chunk", "session_id": SID, "seq": seq, "text": f"{seq} "}

    async def page(self, session_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        await asyncio.sleep(0)
        return [e for e in self.events if e["seq"] > after][:limit]


class Open:
    async def wait_writable(self) -> None:
        await asyncio.sleep(0)


async def opened_with_first_page(store: Store, sent: list) -> tuple[ChatOutbox, asyncio.Task]:
    """An outbox writing into `sent`, with the chat opened and its first page put."""

    async def send(text: str) -> None:
        sent.append(json.loads(text))

    outbox = ChatOutbox(send, Open(), store.page)
    writer = asyncio.create_task(outbox.run())
    outbox.opened(SID, 0)
    for event in await store.page(SID, 0, PAGE):
        outbox.put({**event, "replay": True})
    return outbox, writer


async def test_an_open_ends_after_its_whole_history_and_before_newer_events() -> None:
    store, sent = Store(3 * PAGE + 7), []
    outbox, writer = await opened_with_first_page(store, sent)
    last = store.events[-1]["seq"]
    ending = [{"kind": "session", "session_id": SID}, {"kind": "queue", "items": []}]
    outbox.behind(SID, last, ending)
    # Live events stored after the open, delivered while the history is still being read back.
    for seq in range(last + 1, last + 4):
        store.events.append(store.event(seq))
        outbox.put(store.event(seq))
    async with asyncio.timeout(5):
        while len(sent) < last + 3 + 2:
            await asyncio.sleep(0.01)
    writer.cancel()
    kinds = [e["kind"] for e in sent]
    assert kinds.index("session") == last and kinds.index("queue") == last + 1, kinds
    seqs = [e["seq"] for e in sent if "seq" in e]
    assert seqs == list(range(1, last + 4))  # each event once, in order
    assert all(e["replay"] for e in sent[:last])  # the history, read back or not, is a replay


async def test_a_short_history_ends_at_once() -> None:
    store, sent = Store(3), []
    outbox, writer = await opened_with_first_page(store, sent)
    outbox.behind(SID, 3, [{"kind": "session", "session_id": SID}])
    async with asyncio.timeout(5):
        while len(sent) < 4:
            await asyncio.sleep(0.01)
    writer.cancel()
    assert [e["kind"] for e in sent] == ["agent_message_chunk"] * 3 + ["session"]
