"""Byte and text relays between two members over Redis Streams (contract §18 "Act anywhere").

A terminal or chat opened on another member needs what the channel layer cannot give: nothing
dropped, in order, with backpressure. One relay is two streams, `<prefix>:fleet:s:<id>:down`
(owner → viewer) and `…:up` (viewer → owner); each side writes one and reads the other.

- Entries are signed like bus messages (fleet_app.relay_entries). A forged or stale entry is
  dropped and logged, the relay goes on; a replayed one is refused by its sequence number.
- Acknowledgements travel as `ack` entries on the reader's own outgoing stream, not in a key: the
  other side already blocks on that stream (XREAD), so an ack wakes a waiting writer in the same
  round trip that carries data, with no polling and no second connection per relay. The reader
  acks what the consumer took (`recv()` returned it): at once every ACK_EVERY bytes; once it has
  caught up, in the next frame it writes itself (`ack` in its meta), or alone ACK_IDLE_S later.
  The writer keeps ≤ WINDOW bytes unacknowledged (`send()` waits) and trims its stream up to
  what was acknowledged.
- Writes are coalesced only while a write is already in flight: the first frame goes out at once
  (a keystroke is never held back), frames queued meanwhile share the next round trip.
- `close()` writes a `close` entry and deletes the stream it reads; the other side, reading that
  entry, deletes the other one. Each side renews its stream's EXPIRE (TTL_S) while open, so a
  member that vanished leaves nothing behind, and its peer sees the relay end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque

from redis.asyncio import Redis
from redis.exceptions import RedisError

from . import relay_entries
from .relay_entries import DATA, Stream
from .signing import RefusalLog, Refused

logger = logging.getLogger(__name__)

WINDOW = 1 << 20  # bytes sent and not yet acknowledged before send() waits
ACK_EVERY = 64 * 1024
ACK_IDLE_S = 0.25  # a caught-up reader's ack waits this long for a frame of its own to ride on
MAX_ENTRY = 256 * 1024  # coalesced bytes per stream entry
TRIM_EVERY = 256 * 1024  # acknowledged bytes left in the stream before a trim is worth a command
TRIM_ENTRIES = 128  # … or acknowledged entries (keystrokes are one byte each)
BLOCK_MS = 5000  # one blocking read; redis_link.redis_client's socket timeout is longer
TTL_S = 60.0
Frame = tuple[str, bytes | str]


class RelayClosed(Exception):
    pass


class Relay:
    def __init__(
        self,
        redis: Redis,
        prefix: str,
        relay_id: str,
        *,
        side: str,
        secret: bytes | str,
        machine_id: str,
        ttl: float = TTL_S,
    ) -> None:
        if side not in ("owner", "viewer"):
            raise ValueError("side is 'owner' or 'viewer'")
        base = f"{prefix}:fleet:s:{relay_id}"
        self.out_dir, self.in_dir = ("down", "up") if side == "owner" else ("up", "down")
        self._out = Stream(relay_id, self.out_dir, machine_id)
        self._in = Stream(relay_id, self.in_dir, machine_id)  # its writer: the other side
        self.out_key, self.in_key = f"{base}:{self.out_dir}", f"{base}:{self.in_dir}"
        self.relay_id, self.side, self.machine_id = relay_id, side, machine_id
        self._redis, self._secret, self._ttl = redis, secret, ttl
        self._refusals = RefusalLog(logger)
        self._where = f"relay {relay_id} ({self.in_dir})"
        # writing
        self._pending: deque[tuple[str, bytes]] = deque()
        self._sent = 0  # bytes accepted by send()
        self._written = 0  # bytes in the stream
        self._seq = 0
        self._peer_acked = 0
        self._in_flight: deque[tuple[bytes, int]] = deque()  # (entry id, end offset) not acked
        self._trim_to: str | None = None
        self._untrimmed = 0
        self._untrimmed_entries = 0  # a typist's stream is many small entries
        self._send_lock = asyncio.Lock()
        self._wake = asyncio.Event()  # the flusher has something to write
        self._idle = asyncio.Event()  # nothing pending, nothing in flight
        self._room = asyncio.Event()  # an ack came or the relay ended: a waiting writer rechecks
        # reading
        self._frames: deque[tuple[str, bytes]] = deque()
        self._arrived = asyncio.Event()
        self._in_seq = 0
        self._in_off = 0
        self._consumed = 0
        self._ack_due = 0
        self._ack_sent = 0
        self._ack_by: float | None = None  # when an ack waiting for a frame to ride on goes alone
        self._peer_seen = False
        self._peer_gone = False  # it closed, vanished or never came: nobody reads our stream
        self._opened = time.monotonic()
        # ending
        self.ended: str | None = None  # why nothing more will arrive
        self.write_ended: str | None = None  # why nothing more can be sent
        self._closing = False
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    async def open(cls, redis: Redis, prefix: str, relay_id: str, **keys: object) -> Relay:
        """Open one side (`keys`: the constructor's `side`, `secret`, `machine_id`, `ttl`).
        `redis` needs a socket timeout longer than BLOCK_MS (Bus.redis has)."""
        relay = cls(redis, prefix, relay_id, **keys)  # type: ignore[arg-type]
        async with redis.pipeline(transaction=True) as pipe:
            # Only this entry may create the stream: later ones use NOMKSTREAM, so a write after
            # the other side deleted it (closed) is refused instead of leaving a key behind.
            pipe.xadd(relay.out_key, relay._entry("open", b"", 0))
            pipe.pexpire(relay.out_key, int(relay._ttl * 1000))
            await pipe.execute()
        relay._tasks = [
            asyncio.create_task(coro, name=f"relay {relay_id} {relay.side} {what}")
            for what, coro in (
                ("reader", relay._read_loop()),
                ("flusher", relay._flush_loop()),
                ("keeper", relay._keep_loop()),
            )
        ]
        return relay

    @property
    def unacked(self) -> int:
        """Bytes sent that the other side has not acknowledged yet."""
        return self._sent - self._peer_acked

    # --- the consumer's side ------------------------------------------------------------------

    async def send(self, kind: str, data: bytes | str) -> None:
        """Queue one frame; waits while the window is full. Raises RelayClosed once the relay
        cannot deliver any more. A frame larger than the window is sent alone."""
        if kind not in DATA:
            raise ValueError("kind is 'bytes' or 'text'")
        payload = data.encode() if isinstance(data, str) else bytes(data)
        async with self._send_lock:
            while self.unacked and self.unacked + len(payload) > WINDOW and not self.write_ended:
                self._room.clear()
                await self._room.wait()
            if self.write_ended:
                raise RelayClosed(self.write_ended)
            self._pending.append((kind, payload))
            self._sent += len(payload)
            self._idle.clear()
            self._wake.set()

    async def recv(self) -> Frame | None:
        """The next frame, ("bytes", b"…") or ("text", "…"); None once the other side closed or
        the relay ended (everything that arrived before is returned first)."""
        while not self._frames:
            if self.ended:
                return None
            self._arrived.clear()
            await self._arrived.wait()
        kind, data = self._frames.popleft()
        self._consumed += len(data)
        if self._consumed - self._ack_sent >= ACK_EVERY:
            self._ack_due, self._ack_by = self._consumed, 0.0  # the writer may be waiting
            self._wake.set()
        elif not self._frames:
            # Caught up on a trickle (keys, a prompt's chunks): the ack rides on the next frame
            # this side writes, or goes alone ACK_IDLE_S later. Sent at once, each keystroke
            # cost both members a second stream entry and wake-up.
            self._ack_due = self._consumed
            if self._ack_by is None:
                self._ack_by = time.monotonic() + ACK_IDLE_S
                self._wake.set()
        # The other side is trusted (it holds the secret); a bad byte still must not raise here.
        return (kind, data.decode(errors="replace")) if kind == "text" else (kind, data)

    async def flush(self, timeout: float = 5.0) -> None:  # noqa: ASYNC109 - a bounded wait
        """Wait until every queued frame is in Redis (not that the other side read it)."""
        flusher = self._tasks[1] if len(self._tasks) > 1 else None
        if flusher is None or flusher.done():
            return  # nothing will ever write what is queued
        idle = asyncio.ensure_future(self._idle.wait())
        await asyncio.wait([idle, flusher], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        idle.cancel()

    async def close(self) -> None:
        """Tell the other side (after what is queued), stop, and delete the keys this side may."""
        if self._closing:
            return
        self._closing = True
        if not self.write_ended:
            self._pending.append(("close", b""))
            self._idle.clear()
            self._wake.set()
            await self.flush()
        self._end("closed on this side", writing_too=True)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        # The stream we read is ours to delete; ours stays (with its close entry and its TTL)
        # for the other side to read and delete, unless that side is already gone.
        keys = [self.in_key] if self._peer_alive() else [self.in_key, self.out_key]
        with contextlib.suppress(RedisError, OSError):
            await self._redis.delete(*keys)

    def _peer_alive(self) -> bool:
        return self._peer_seen and not self._peer_gone

    # --- writing ------------------------------------------------------------------------------

    def _entry(
        self, kind: str, data: bytes, offset: int, ack: int | None = None
    ) -> dict[bytes, bytes]:
        self._seq += 1
        return relay_entries.seal(self._secret, self._out, self._seq, kind, data, offset, ack)

    async def _flush_loop(self) -> None:
        try:
            while not self.write_ended:
                if not self._pending and not self._ack_now() and not self._trim_due():
                    self._idle.set()
                    self._wake.clear()
                    await self._wait_for_work()
                    continue
                await self._write_batch()
        except (RedisError, OSError) as exc:
            self._end(f"Redis failed: {exc}", writing_too=True)
        self._idle.set()

    def _ack_now(self) -> bool:
        if self._ack_due <= self._ack_sent:
            return False
        return self._ack_by is None or time.monotonic() >= self._ack_by

    async def _wait_for_work(self) -> None:
        waiting = self._ack_due > self._ack_sent and self._ack_by is not None
        timeout = max(self._ack_by - time.monotonic(), 0) if waiting else None  # type: ignore[operator]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    def _trim_due(self) -> bool:
        enough = self._untrimmed >= TRIM_EVERY or self._untrimmed_entries >= TRIM_ENTRIES
        return self._trim_to is not None and enough

    async def _write_batch(self) -> None:
        batch: list[tuple[str, bytes, int]] = []
        ack = self._ack_due if self._ack_due > self._ack_sent else None
        if ack is not None and not self._pending:
            batch.append(("ack", b"", ack))
        while self._pending and len(batch) < 64:
            kind, data = self._pending.popleft()
            if kind == "bytes" and self._pending and self._pending[0][0] == "bytes":
                parts = [data]
                size = len(data)
                while self._pending and self._pending[0][0] == "bytes" and size < MAX_ENTRY:
                    size += len(self._pending[0][1])
                    parts.append(self._pending.popleft()[1])
                data = b"".join(parts)
            batch.append((kind, data, self._written))
            self._written += len(data)
        # The ack rides on the batch's first entry: one entry (and one wake-up) fewer.
        entries = [
            self._entry(kind, data, offset, ack if i == 0 else None)
            for i, (kind, data, offset) in enumerate(batch)
        ]
        # Trimmed once enough was acknowledged to be worth a command (TRIM_EVERY), not on
        # every write: a keystroke's entry goes alone, without a pipeline around it.
        trim = self._trim_due()
        if len(entries) == 1 and not trim:
            results = [await self._redis.xadd(self.out_key, entries[0], nomkstream=True)]
        else:
            async with self._redis.pipeline(transaction=False) as pipe:
                for entry in entries:
                    pipe.xadd(self.out_key, entry, nomkstream=True)
                if trim:
                    pipe.xtrim(self.out_key, minid=self._trim_to, approximate=False)
                    self._trim_to, self._untrimmed, self._untrimmed_entries = None, 0, 0
                results = await pipe.execute()
        if ack is not None:
            self._ack_sent = max(self._ack_sent, ack)
        if self._ack_sent >= self._ack_due:
            self._ack_by = None
        for (kind, data, offset), entry_id in zip(batch, results, strict=False):
            if entry_id is None:
                # NOMKSTREAM found no stream: the other side closed and deleted it, or it expired.
                self._end_writing("the other side closed the relay")
                return
            if kind in DATA:
                self._in_flight.append((entry_id, offset + len(data)))

    def _acked(self, offset: int) -> None:
        if offset <= self._peer_acked:
            return
        self._untrimmed += offset - self._peer_acked
        self._peer_acked = offset
        last = None
        while self._in_flight and self._in_flight[0][1] <= offset:
            last = self._in_flight.popleft()[0]
            self._untrimmed_entries += 1
        if last is not None:
            ms, _, seq = last.partition(b"-")
            self._trim_to = f"{int(ms)}-{int(seq) + 1}"  # MINID keeps ids ≥ this: drops ≤ last
        if self._trim_due():
            self._wake.set()
        self._room.set()

    # --- reading ------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        last = b"0-0"
        try:
            while not self.ended:
                answer = await self._redis.xread({self.in_key: last}, count=512, block=BLOCK_MS)
                for _key, entries in answer or ():
                    for entry_id, fields in entries:
                        last = entry_id
                        self._take_any(entry_id, fields)
                self._arrived.set()
            if self._peer_gone:
                # Its close entry was the last word: nobody reads that stream any more.
                await self._redis.delete(self.in_key)
        except (RedisError, OSError) as exc:
            self._end(f"Redis failed: {exc}", writing_too=True)

    def _take_any(self, entry_id: bytes, fields: dict[bytes, bytes]) -> None:
        """An entry anyone with Redis access may have added: one that cannot be read costs one
        (rate-limited) log line and is skipped; the relay goes on."""
        try:
            self._take(entry_id, fields)
        except Exception as exc:
            unreadable = Refused(f"unreadable ({type(exc).__name__})", verified=False)
            if self._refusals.note(unreadable, self._where):
                logger.warning("fleet: what relay %s could not read", self.relay_id, exc_info=exc)

    def _take(self, entry_id: bytes, fields: dict[bytes, bytes]) -> None:
        try:
            meta, data = relay_entries.opened(self._secret, self._in, entry_id, fields)
        except Refused as refused:
            self._refusals.note(refused, self._where)
            return
        if meta["seq"] <= self._in_seq:
            self._refusals.note(Refused("replayed", str(meta["from"])), self._where)
            return
        if meta["seq"] != self._in_seq + 1 or (
            meta["kind"] in DATA and meta["off"] != self._in_off
        ):
            # Something deleted signed entries: say so and end rather than hand over a gap.
            logger.warning("fleet: relay %s lost entries (%s)", self.relay_id, self.in_dir)
            self._end("the relay lost data", writing_too=True)
            return
        self._in_seq = meta["seq"]
        self._peer_seen = True
        kind = meta["kind"]
        if isinstance(meta.get("ack"), int):
            self._acked(meta["ack"])
        if kind in DATA:
            self._frames.append((kind, data))
            self._in_off += len(data)
        elif kind == "ack":
            self._acked(meta["off"])
        elif kind == "close":
            self._peer_gone = True
            self._end("the other side closed the relay", writing_too=True)

    # --- keeping alive, ending ----------------------------------------------------------------

    async def _keep_loop(self) -> None:
        every = min(20.0, self._ttl / 3)
        try:
            while not self.ended:
                await asyncio.sleep(every)
                async with self._redis.pipeline(transaction=False) as pipe:
                    pipe.pexpire(self.out_key, int(self._ttl * 1000))
                    pipe.exists(self.in_key)
                    renewed, peer_there = await pipe.execute()
                if not renewed:
                    self._end_writing("the other side closed the relay")
                if self._peer_seen and not peer_there:
                    self._peer_gone = True
                    self._end("the other side is gone (its stream expired)", writing_too=True)
                elif not self._peer_seen and time.monotonic() - self._opened > self._ttl:
                    self._peer_gone = True
                    self._end("the other side never opened the relay", writing_too=True)
        except (RedisError, OSError) as exc:
            self._end(f"Redis failed: {exc}", writing_too=True)

    def _end_writing(self, reason: str) -> None:
        if self.write_ended is None:
            self.write_ended = reason
        self._pending.clear()
        self._wake.set()
        self._room.set()
        self._idle.set()

    def _end(self, reason: str, *, writing_too: bool) -> None:
        if self.ended is None:
            self.ended = reason
        if writing_too:
            self._end_writing(reason)
        self._arrived.set()
