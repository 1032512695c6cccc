"""The Redis channel layer as svc configures it, against the real Redis: a consumer waiting for
its next message outlasts an empty wait whose answer comes late (a busy machine, a slow link)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from channels_redis.core import RedisChannelLayer

from harness.services import require
from svcproject.settings import channel_layers

REDIS_PORT = 6379
LATE_S = 0.2  # how much later than Redis sent them the replies reach the client


@asynccontextmanager
async def late_replies(wait_over: asyncio.Event) -> AsyncIterator[int]:
    """A TCP hop to Redis that hands every reply over LATE_S late; sets `wait_over` once the first
    blocking wait (BZPOPMIN) is over: its answer handed over, or the client gone before it."""

    async def relay(client_reader, client_writer) -> None:
        redis_reader, redis_writer = await asyncio.open_connection("127.0.0.1", REDIS_PORT)
        waiting = asyncio.Event()

        async def upstream() -> None:
            while data := await client_reader.read(65536):
                if b"BZPOPMIN" in data:
                    waiting.set()
                redis_writer.write(data)
            if waiting.is_set():
                wait_over.set()
            redis_writer.close()

        async def downstream() -> None:
            while data := await redis_reader.read(65536):
                await asyncio.sleep(LATE_S)
                client_writer.write(data)
                if waiting.is_set():
                    wait_over.set()
            client_writer.close()

        await asyncio.gather(upstream(), downstream(), return_exceptions=True)

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def test_a_consumer_outlasts_an_empty_wait_answered_late() -> None:
    require(REDIS_PORT, "Redis")
    wait_over = asyncio.Event()
    async with late_replies(wait_over) as port:
        url = f"redis://127.0.0.1:{port}/0"
        config = channel_layers(url, f"svc-test-{secrets.token_hex(4)}")["default"]["CONFIG"]
        layer = RedisChannelLayer(**config)
        channel = await layer.new_channel()
        receiving = asyncio.create_task(layer.receive(channel))
        # One whole empty BZPOPMIN (channels-redis waits 5 s), answered LATE_S after Redis sent
        # it: with redis-py's own 5 s read timeout the receive had failed by then.
        await asyncio.wait_for(wait_over.wait(), 30)
        await asyncio.sleep(0.1)  # the client's turn to read the answer
        assert not receiving.done(), receiving.exception()
        await layer.send(channel, {"type": "after.the.wait", "n": 1})
        assert await asyncio.wait_for(receiving, 15) == {"type": "after.the.wait", "n": 1}
        await layer.flush()
