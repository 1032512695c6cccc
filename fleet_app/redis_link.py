"""How a fleet member reaches Redis (contract §18): a client that fails fast, and where Redis
is, said without its password. Shared by the bus and the relays."""

from __future__ import annotations

from urllib.parse import urlsplit

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

CONNECT_TIMEOUT_S = 2.0


def redis_client(redis_url: str, *, retries: int = 1, socket_timeout: float = 15.0) -> Redis:
    """A client that fails fast: one retry only, so a stale pooled connection after a Redis restart
    reconnects once, and a Redis that is gone is reported within seconds instead of backed off
    inside redis-py. Its socket timeout outlasts a relay's blocking read (relay_streams.BLOCK_MS).
    """
    return Redis.from_url(
        redis_url,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=socket_timeout,
        socket_keepalive=True,
        retry=Retry(NoBackoff(), retries),
    )


def redis_where(redis_url: str) -> str:
    """host:port of a Redis URL for messages: never its password."""
    parts = urlsplit(redis_url)
    return f"Redis at {parts.hostname or 'localhost'}:{parts.port or 6379}"
