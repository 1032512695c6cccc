"""The fleet bus (contract §18): signed messages between members over Redis pub/sub.

`<prefix>:fleet:all` carries broadcasts, `<prefix>:fleet:m:<machine id>` each member's inbox. Every
message is sealed with the fleet secret (signing.py); what does not verify is dropped and logged.
`call()` is RPC over the inboxes: the request carries a call id, the answer comes back to the
caller's inbox as kind "reply" with the same id. When Redis goes away the bus says so through its
status callbacks, retries with backoff (1 s, then every 2 s) and, once back, announces itself with
a `hello` broadcast and runs its `on_rejoin` callbacks so the fleet layer can republish its lists.

Plain asyncio and redis.asyncio, no Django: the fleet app wires it into the runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

from .redis_link import redis_client, redis_where
from .signing import (
    BROADCAST,
    Envelope,
    NonceCache,
    RefusalLog,
    Refused,
    canonical,
    open_sealed,
    seal,
)

logger = logging.getLogger(__name__)

Handler = Callable[[Envelope], Awaitable[dict[str, Any] | None]]
StatusCallback = Callable[[str, str], Any]  # (status, detail); may be async
RejoinCallback = Callable[[], Any]  # may be async

ONLINE = "online"
UNREACHABLE = "unreachable"
REPLY = "reply"
HELLO = "hello"
BACKOFF_FIRST_S = 1.0
# Low: a member is back (its lists converged) within seconds of Redis returning.
BACKOFF_MAX_S = 2.0
QUIET_PING_S = 3.0  # a silent subscription is pinged this often…
SILENT_DEAD_S = 10.0  # …and given up when Redis has said nothing for this long (a half-open link)
PUBLISH_TIMEOUT_S = 5.0
SUBSCRIBE_TIMEOUT_S = 5.0


class FleetUnreachable(Exception):
    """A member could not be reached: no answer in time, nobody listening, or Redis gone."""

    def __init__(self, machine_id: str, reason: str) -> None:
        super().__init__(f"machine {machine_id} is unreachable: {reason}")
        self.machine_id, self.reason = machine_id, reason


class _ConnectionLost(Exception):  # a subscription that went silent
    pass


class Bus:
    def __init__(
        self,
        redis_url: str,
        prefix: str,
        machine_id: str,
        secret: bytes | str,
        *,
        on_status: StatusCallback | None = None,
        on_rejoin: RejoinCallback | None = None,
    ) -> None:
        self.redis_url, self.prefix, self.machine_id = redis_url, prefix, machine_id
        self._secret = secret
        self.channel_all = f"{prefix}:fleet:all"
        self._channel_all_bytes = self.channel_all.encode()
        self._where = redis_where(redis_url)
        self._handlers: dict[str, Handler] = {"ping": _pong}
        self._status_callbacks = [on_status] if on_status else []
        self._rejoin_callbacks = [on_rejoin] if on_rejoin else []
        self._nonces = NonceCache()
        self._refusals = RefusalLog(logger)
        self._calls: dict[str, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._reported: str | None = None
        self._detail = "not started"
        self._redis: Redis | None = None
        self._runner: asyncio.Task[None] | None = None
        self._first_attempt = asyncio.Event()

    def inbox(self, machine_id: str) -> str:
        return f"{self.prefix}:fleet:m:{machine_id}"

    def handle(self, kind: str, handler: Handler) -> None:
        """Answer messages of `kind`: the handler's dict answers a call (None → {}); an exception
        answers it with {"error": {...}} and is logged, and the bus goes on."""
        if kind == REPLY:
            raise ValueError("'reply' is the bus's own kind")
        self._handlers[kind] = handler

    def on_status(self, callback: StatusCallback) -> None:
        self._status_callbacks.append(callback)

    def on_rejoin(self, callback: RejoinCallback) -> None:
        self._rejoin_callbacks.append(callback)

    @property
    def status(self) -> str:
        return self._reported or UNREACHABLE

    @property
    def detail(self) -> str:
        return self._detail

    @property
    def redis(self) -> Redis:
        """The bus's command client, shared with the byte relays (relay_streams)."""
        if self._redis is None:
            raise RuntimeError("the bus is not started")
        return self._redis

    async def start(self) -> None:
        """Connects in the background; returns once the first attempt is over (either way), so
        `status` is meaningful. Redis being down is not an error: the bus keeps trying."""
        self._redis = redis_client(self.redis_url)
        self._runner = asyncio.create_task(self._run(), name=f"fleet bus {self.machine_id}")
        await self._first_attempt.wait()

    async def stop(self) -> None:
        tasks = [t for t in (self._runner, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._runner = None
        self._fail_calls("the fleet bus stopped")
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    async def _run(self) -> None:
        delay = BACKOFF_FIRST_S
        joined_before = False
        while True:
            # The subscription's reads wait through get_message's own timeout; this one bounds
            # SUBSCRIBE on a link that accepts connections and then says nothing.
            client = redis_client(self.redis_url, retries=0, socket_timeout=SUBSCRIBE_TIMEOUT_S)
            pubsub = client.pubsub()
            try:
                await pubsub.subscribe(self.channel_all, self.inbox(self.machine_id))
            except (RedisError, OSError) as exc:
                await self._lost(client, pubsub, f"{self._where}: {exc}")
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX_S)
                continue
            delay = BACKOFF_FIRST_S
            await self._report(ONLINE, f"connected to {self._where}")
            self._spawn(self._announce(rejoined=joined_before))
            joined_before = True
            try:
                await self._listen(pubsub)
            except (RedisError, OSError, _ConnectionLost) as exc:
                await self._lost(client, pubsub, f"{self._where}: {exc or type(exc).__name__}")
            except Exception as exc:
                # svc's own bug, not Redis: still never the end of the loop, or the fleet splits
                # for good while this member's status reads online.
                logger.exception("fleet: the bus reader failed; subscribing again")
                await self._lost(client, pubsub, f"the bus reader failed: {type(exc).__name__}")
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_S)

    async def _lost(self, client: Redis, pubsub: PubSub, detail: str) -> None:
        # Replies to calls in flight would come through the broken subscription: fail them now.
        self._fail_calls(f"lost the connection to Redis ({detail})")
        await self._report(UNREACHABLE, detail)
        for closing in (pubsub.aclose(), client.aclose()):
            with contextlib.suppress(RedisError, OSError):
                await closing

    async def _listen(self, pubsub: PubSub) -> None:
        loop = asyncio.get_running_loop()
        heard = next_ping = loop.time()
        while True:
            message = await pubsub.get_message(timeout=1.0)
            now = loop.time()
            if message is not None:
                heard = now
                if message["type"] == "message":
                    self._receive_any(message["channel"], message["data"])
                continue
            if now - heard > SILENT_DEAD_S:
                raise _ConnectionLost(f"no answer to a ping for {SILENT_DEAD_S:g} s")
            if now - heard >= QUIET_PING_S and now >= next_ping:
                await pubsub.ping()  # its pong counts as hearing from Redis
                next_ping = now + QUIET_PING_S

    async def _announce(self, *, rejoined: bool) -> None:
        try:
            await self.broadcast(HELLO, {"rejoined": rejoined})
        except FleetUnreachable as exc:
            logger.info("fleet: could not announce this member: %s", exc.reason)
        if rejoined:
            for callback in self._rejoin_callbacks:
                await _invoke(callback)

    async def _report(self, status: str, detail: str) -> None:
        self._detail = detail
        self._first_attempt.set()
        if status == self._reported:
            return
        self._reported = status
        log = logger.info if status == ONLINE else logger.warning
        log("fleet: the bus is %s (%s)", status, detail)
        for callback in self._status_callbacks:
            await _invoke(callback, status, detail)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _fail_calls(self, reason: str) -> None:
        for target, future in self._calls.values():
            if not future.done():
                future.set_exception(FleetUnreachable(target, reason))

    # --- sending ------------------------------------------------------------------------------

    async def broadcast(self, kind: str, body: dict[str, Any]) -> int:
        """Publish to every member (this one skips its own); returns how many subscribers
        Redis handed it to. Raises FleetUnreachable("*", …) when Redis is gone."""
        data = seal(self._secret, self.machine_id, kind, body, to=BROADCAST)
        return await self._publish(self.channel_all, data, BROADCAST)

    async def send(self, machine_id: str, kind: str, body: dict[str, Any]) -> int:
        """Fire and forget to one member's inbox; returns 1 when it is listening, 0 when not."""
        if machine_id == self.machine_id:
            self._spawn(self._dispatch(self._local(kind, body, None)))
            return 1
        data = seal(self._secret, self.machine_id, kind, body, to=machine_id)
        return await self._publish(self.inbox(machine_id), data, machine_id)

    async def call(
        self,
        machine_id: str,
        kind: str,
        body: dict[str, Any],
        timeout: float = 10.0,  # noqa: ASYNC109 - the fleet's RPC deadline, part of its API
    ) -> dict[str, Any]:
        """Ask one member and wait for its handler's answer. A handler that failed answers
        {"error": {"code": "handler_failed", …}}, an unknown kind {"error": {"code":
        "unknown_kind", …}}. Raises FleetUnreachable on timeout, when no such member is
        listening, or when Redis is gone."""
        if machine_id == self.machine_id:
            return await self._answer_of(self._local(kind, body, "local"))
        if self.status != ONLINE:
            raise FleetUnreachable(machine_id, f"the fleet bus is unreachable ({self._detail})")
        call_id = secrets.token_hex(12)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._calls[call_id] = (machine_id, future)
        try:
            async with asyncio.timeout(timeout):
                data = seal(self._secret, self.machine_id, kind, body, to=machine_id, call=call_id)
                if not await self._publish(self.inbox(machine_id), data, machine_id):
                    raise FleetUnreachable(machine_id, "no member with this id is listening")
                return await future
        except TimeoutError:
            raise FleetUnreachable(machine_id, f"no answer within {timeout:g} s") from None
        finally:
            self._calls.pop(call_id, None)

    async def _publish(self, channel: str, data: bytes, target: str) -> int:
        if self._redis is None:
            raise FleetUnreachable(target, "the fleet bus is not started")
        try:
            async with asyncio.timeout(PUBLISH_TIMEOUT_S):
                return int(await self._redis.publish(channel, data))
        except (RedisError, OSError, TimeoutError) as exc:
            raise FleetUnreachable(target, f"{self._where}: {exc or type(exc).__name__}") from exc

    def _local(self, kind: str, body: dict[str, Any], call: str | None) -> Envelope:
        return Envelope(self.machine_id, self.machine_id, time.time(), "local", kind, body, call)

    # --- receiving ----------------------------------------------------------------------------

    def _receive_any(self, channel: bytes, data: bytes) -> None:
        """Whatever anyone with Redis access published: a message that cannot be read costs one
        (rate-limited) log line, never the reader."""
        try:
            self._receive(channel, data)
        except Exception as exc:
            unreadable = Refused(f"unreadable ({type(exc).__name__})", verified=False)
            if self._refusals.note(unreadable, "the bus"):
                logger.warning("fleet: what the bus could not read", exc_info=exc)

    def _receive(self, channel: bytes, data: bytes) -> None:
        on_inbox = channel != self._channel_all_bytes
        try:
            envelope = open_sealed(
                self._secret,
                data,
                now=time.time(),
                seen_nonces=self._nonces,
                own_id=self.machine_id if on_inbox else None,
                to=self.machine_id if on_inbox else BROADCAST,
            )
        except Refused as refused:
            self._refusals.note(refused, "the inbox" if on_inbox else "the broadcast channel")
            return
        if envelope.sender == self.machine_id:
            return  # our own broadcast, heard back
        if envelope.kind == REPLY:
            if on_inbox:
                self._settle(envelope)
        elif envelope.call is not None and on_inbox:
            self._spawn(self._reply(envelope))
        else:
            self._spawn(self._dispatch(envelope))

    def _settle(self, reply: Envelope) -> None:
        target, future = self._calls.get(reply.call or "", ("", None))
        # A reply must come from the member that was asked (any other is ignored, not trusted).
        if future is not None and target == reply.sender and not future.done():
            future.set_result(reply.body)

    async def _dispatch(self, envelope: Envelope) -> None:
        handler = self._handlers.get(envelope.kind)
        if handler is None:
            logger.debug("fleet: no handler for %r from %s", envelope.kind, envelope.sender)
            return
        try:
            await handler(envelope)
        except Exception:
            logger.exception(
                "fleet: the %r handler failed on a message from %s", envelope.kind, envelope.sender
            )

    async def _answer_of(self, envelope: Envelope) -> dict[str, Any]:
        handler = self._handlers.get(envelope.kind)
        if handler is None:
            return _error("unknown_kind", f"no handler for {envelope.kind!r} on this member")
        try:
            answer = await handler(envelope)
        except Exception as exc:
            logger.exception(
                "fleet: the %r handler failed on a call from %s", envelope.kind, envelope.sender
            )
            return _error("handler_failed", f"{type(exc).__name__}: {exc}")
        if not isinstance(answer, dict | None):
            return _error("handler_failed", f"the handler answered a {type(answer).__name__}")
        try:
            canonical(answer)
        except (TypeError, ValueError) as exc:  # an answer JSON cannot carry
            return _error("handler_failed", f"unserialisable answer: {exc}")
        return answer or {}

    async def _reply(self, request: Envelope) -> None:
        answer = await self._answer_of(request)
        to, call = request.sender, request.call
        data = seal(self._secret, self.machine_id, REPLY, answer, to=to, call=call)
        try:
            await self._publish(self.inbox(request.sender), data, request.sender)
        except FleetUnreachable as exc:
            logger.info(
                "fleet: could not answer %r to %s: %s", request.kind, request.sender, exc.reason
            )


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


async def _pong(envelope: Envelope) -> dict[str, Any]:
    return {"pong": True}


async def _invoke(callback: Callable[..., Any], *args: Any) -> None:
    """A status or rejoin callback, sync or async; its failure is logged, never the bus's."""
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:
        logger.exception("fleet: a bus callback failed")
