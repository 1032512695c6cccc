"""What a test sees of the fake Slack and does to its connections: calls, messages, acks,
disconnects and refusals on demand."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
from collections.abc import Callable
from typing import Any

from harness.fakes.slack_records import Ack, Call, Connection, Envelope, Item


class Observations:
    """Part of FakeSlack (slack_api.py)."""

    # --- connection controls ---------------------------------------------------------------

    def disconnect(self, reason: str = "refresh_requested", close_after: float | None = None):
        """Send `{"type": "disconnect", "reason": reason}` on every open socket, as Slack does
        before it recycles one; close those sockets `close_after` seconds later."""
        delay = self.close_after if close_after is None else close_after
        with self._lock:
            targets = [c for c in self._connections if c.usable and not c.draining]
            for conn in targets:
                conn.draining = True
        frame = json.dumps(
            {
                "type": "disconnect",
                "reason": reason,
                "debug_info": {"host": "applink-fake-1"},
            }
        )

        async def run() -> None:
            for conn in targets:
                with contextlib.suppress(Exception):
                    await conn.ws.send_str(frame)
            await asyncio.sleep(delay)
            for conn in targets:
                if conn.closed_at is None:
                    await self._close(conn, abrupt=False)

        self._spawn(run())

    def go_away(self, seconds: float | None = None, abrupt: bool = False) -> None:
        """Drop every socket (a close frame, or with `abrupt` a reset) and answer new ones 503
        until come_back() (or for `seconds`). The Web API keeps working."""
        with self._lock:
            self._refusing = True
            targets = [c for c in self._connections if c.closed_at is None]
            for conn in targets:
                conn.dropped = True

        async def run() -> None:
            for conn in targets:
                await self._close(conn, abrupt=abrupt)
            if seconds is not None:
                await asyncio.sleep(seconds)
                self.come_back()

        self._spawn(run())

    def come_back(self) -> None:
        with self._lock:
            self._refusing = False
        self._wake()

    def fail_next(
        self,
        method: str,
        error: str = "ratelimited",
        status: int | None = None,
        times: int = 1,
        retry_after: int = 1,
    ) -> None:
        """The next `times` calls of `method` answer `error` (`ratelimited`: HTTP 429 with
        Retry-After, as Slack; otherwise HTTP 200 unless `status`)."""
        code = status or (429 if error == "ratelimited" else 200)
        headers = {"Retry-After": str(retry_after)} if code == 429 else {}
        with self._lock:
            self._failures.setdefault(method, []).extend([(error, code, headers)] * times)

    def _spawn(self, coro: Any) -> None:
        if self.loop is None:
            coro.close()
            return
        self._spawned.append(asyncio.run_coroutine_threadsafe(coro, self.loop))

    async def _close(self, conn: Connection, abrupt: bool) -> None:
        if conn.closed_at is not None:
            return
        if abrupt and conn.transport is not None:
            conn.transport.abort()
            return
        if conn.ws is not None:
            with contextlib.suppress(Exception):
                await conn.ws.close(code=1001, message=b"going away")

    # --- observations ----------------------------------------------------------------------

    @property
    def log(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def calls(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if c.method == method]

    def downloads(self) -> list[Call]:
        """Every GET of a url_private this fake serves, with the token its Authorization
        header carried."""
        return self.calls("files-pri")

    @property
    def acks(self) -> list[Ack]:
        with self._lock:
            return list(self._acks)

    @property
    def envelopes(self) -> list[Envelope]:
        """Every envelope sent, in order (a retry is a new envelope with the same key)."""
        with self._lock:
            return sorted(self._envelopes.values(), key=lambda e: e.sent_at)

    def envelopes_for(self, key: str) -> list[Envelope]:
        with self._lock:
            item = self._items_by_key.get(key)
            return list(item.envelopes) if item else []

    def item(self, key: str) -> Item | None:
        with self._lock:
            return self._items_by_key.get(key)

    def items(self, type: str | None = None) -> list[Item]:
        with self._lock:
            return [i for i in self._items if type is None or i.type == type]

    def event_key(self, ts: str, type: str = "message") -> str:
        """The event_id of the `type` event Slack emitted for the message `ts`."""
        with self._lock:
            for item in self._items:
                event = item.payload.get("event") or {}
                edit = event.get("subtype", "").startswith("message_")
                if event.get("type") == type and event.get("ts") == ts and not edit:
                    return item.key
        raise KeyError(f"no {type} event for {ts}")

    @property
    def socket_messages(self) -> list[tuple[int, str]]:
        """Frames the app sent that were not acks."""
        with self._lock:
            return list(self._socket_messages)

    @property
    def connections(self) -> list[Connection]:
        with self._lock:
            return list(self._connections)

    @property
    def open_connections(self) -> int:
        with self._lock:
            return sum(1 for c in self._connections if c.usable)

    def messages(self, channel: str = "C1") -> list[dict]:
        with self._lock:
            return copy.deepcopy(self._messages.get(channel, []))

    def posted(self, channel: str = "C1") -> list[dict]:
        """The bot's messages in `channel`, as they are now (after updates), in posting order."""
        with self._lock:
            return [
                copy.deepcopy(m)
                for m in self._messages.get(channel, [])
                if m.get("bot_id") == self.bot_id
            ]

    def updates(self, channel: str = "C1") -> list[dict]:
        """Every chat.update (and response_url replace) of a message in `channel`:
        {channel, ts, at (monotonic), text, blocks}."""
        with self._lock:
            return [copy.deepcopy(u) for u in self._updates if u["channel"] == channel]

    def ephemerals(self, channel: str | None = None) -> list[dict]:
        with self._lock:
            return [
                copy.deepcopy(e)
                for e in self._ephemerals
                if channel is None or e["channel"] == channel
            ]

    @property
    def responses(self) -> list[dict]:
        """Bodies posted to response_urls."""
        with self._lock:
            return copy.deepcopy(self._responses)

    def settled(self) -> bool:
        """Nothing is waiting for delivery or an ack."""
        with self._lock:
            return all(i.state not in ("pending", "sent") for i in self._items)

    def assert_acked_once(self) -> None:
        """Every item Slack had to deliver was acked exactly once over all its envelopes, no
        envelope twice, and no ack named an unknown envelope."""
        with self._lock:
            problems = []
            for item in self._items:
                count = sum(len(e.acks) for e in item.envelopes)
                if count != 1:
                    event = item.payload.get("event") or item.payload
                    problems.append(
                        f"{item.type} {item.key} ({event.get('type')}) acked {count} times, "
                        f"{len(item.envelopes)} deliveries, state {item.state}"
                    )
            problems += [
                f"ack for unknown envelope {a.envelope_id}" for a in self._acks if not a.known
            ]
        assert not problems, "; ".join(problems)

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Poll `predicate` until truthy, from a thread that is not running the client's
        event loop; returns its value."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "FakeSlack.wait_for would block the running event loop (and the client on "
                "it): use `await fake.wait_for_async(...)`"
            )
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
            time.sleep(0.01)

    async def wait_for_async(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
            await asyncio.sleep(0.01)
