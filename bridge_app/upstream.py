"""Sending to providers: one pooled client per process, timeouts, bounded 429 retry honouring
Retry-After, and closing the connection (not returning it to the pool) when cancelled.

The client library is aiohttp: measured against httpx and httpx2 on this path, it served more
than twice their requests/s (numbers in docs/bridge.md).
"""

from __future__ import annotations

import asyncio
import functools
import types
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from bridge_app.bodies import JsonBody
from bridge_app.ir import BridgeError
from core import config

UpstreamBody = bytes | bytearray | JsonBody

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = config.knobs().bridge_read_timeout_s
MAX_RETRIES = config.knobs().bridge_max_retries
MAX_RETRY_WAIT = 10.0  # never sleep longer than this for one Retry-After
MAX_STALE_CONNECTIONS = 3  # pooled connections found closed, sent again on another (open())


class Response(Protocol):
    status: int
    headers: dict[str, str]

    async def read(self) -> bytes: ...
    def chunks(self) -> AsyncIterator[bytes]: ...
    async def close(self) -> None: ...


@dataclass
class _AiohttpResponse:
    raw: Any
    status: int
    headers: dict[str, str]

    async def read(self) -> bytes:
        try:
            return await self.raw.read()
        finally:
            self.raw.release()

    async def chunks(self) -> AsyncIterator[bytes]:
        async for chunk in self.raw.content.iter_any():
            yield chunk

    async def close(self) -> None:
        self.raw.close()  # drops the connection: the provider sees the stream end


class UpstreamClient:
    """One pooled aiohttp session, owned by the runtime: made on first use inside the running
    loop, closed when the runtime stops."""

    def __init__(self) -> None:
        self.session: Any = None

    def _make(self) -> Any:
        # aiohttp is imported where used, not at the top: ~0.3 s that every start (and every
        # test's daemon) would pay before binding, though many never call a provider.
        import aiohttp

        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT
        )
        connector = aiohttp.TCPConnector(limit=256, ttl_dns_cache=300)
        reuse = aiohttp.TraceConfig()
        reuse.on_connection_reuseconn.append(self._mark_reused)
        return aiohttp.ClientSession(timeout=timeout, connector=connector, trace_configs=[reuse])

    async def open(self, url: str, headers: dict[str, str], body: UpstreamBody) -> Response:
        import aiohttp  # not at the top: see _make

        if self.session is None:
            self.session = self._make()
        if isinstance(body, JsonBody):
            headers = {**headers, "Content-Length": str(body.length)}
        stale = 0
        while True:
            data: Any = body.pieces() if isinstance(body, JsonBody) else body  # afresh each try
            attempt = types.SimpleNamespace(reused=False)  # set by _mark_reused
            try:
                raw = await self.session.post(
                    url, data=data, headers=headers, proxy=proxy_for(url), trace_request_ctx=attempt
                )
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
                # Providers close idle keep-alive connections. When the FIN arrives while this
                # loop is busy (decoding and parsing a 64 MiB request holds it for half a second
                # on a loaded machine), the pool still hands out the closed connection: the
                # provider resets it and aiohttp raises "Can not write request body" (or "Server
                # disconnected" for a small body) before any answer. aiohttp retries that only
                # for idempotent methods. A pooled connection failing before the answer began is
                # that race (RFC 9112 §9.3.1; the vendors' SDKs retry it too), and a provider
                # does not act on a request that arrives on a connection it closed: send it
                # again. The failed connection leaves the pool; a fresh connection's failure is
                # the provider's own and goes to the client. Timeouts are not retried.
                if not attempt.reused or stale == MAX_STALE_CONNECTIONS:
                    raise
                stale += 1
                continue
            return _AiohttpResponse(raw, raw.status, {k.lower(): v for k, v in raw.headers.items()})

    @staticmethod
    async def _mark_reused(session: Any, context: Any, params: Any) -> None:
        context.trace_request_ctx.reused = True  # this try got a connection from the pool

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None

    @staticmethod
    def is_timeout(exc: BaseException) -> bool:
        return (
            isinstance(exc, asyncio.TimeoutError | TimeoutError) or "Timeout" in type(exc).__name__
        )

    @staticmethod
    def transport_errors() -> tuple[type[BaseException], ...]:
        import aiohttp  # not at the top: see UpstreamClient._make

        return (aiohttp.ClientError, asyncio.TimeoutError, OSError)


@functools.lru_cache(maxsize=256)
def _proxy_for_origin(scheme: str, host: str) -> str | None:
    if urllib.request.proxy_bypass(host):
        return None
    return urllib.request.getproxies().get(scheme)


def proxy_for(url: str) -> str | None:
    """HTTPS_PROXY / HTTP_PROXY / NO_PROXY, as the vendors' SDKs honour them; looked up once per
    provider origin (aiohttp's trust_env would re-read the environment and ~/.netrc per request)."""
    parts = urllib.parse.urlsplit(url)
    return _proxy_for_origin(parts.scheme, parts.hostname or "")


def retry_delay(headers: dict[str, str], attempt: int) -> float:
    """Retry-After seconds (or retry-after-ms), else exponential backoff; always bounded."""
    try:
        if "retry-after-ms" in headers:
            return min(float(headers["retry-after-ms"]) / 1000, MAX_RETRY_WAIT)
        if "retry-after" in headers:
            return min(float(headers["retry-after"]), MAX_RETRY_WAIT)
    except ValueError:
        pass
    return min(0.5 * 2**attempt, MAX_RETRY_WAIT)


async def send(
    client: UpstreamClient, url: str, headers: dict[str, str], body: UpstreamBody
) -> Response:
    """The provider's response with headers read, through the daemon's pooled `client`; 429s
    retried. Transport failures become BridgeError 502 (unreachable) or 504 (timed out)."""
    attempt = 0
    while True:
        resp = await _open(client, url, headers, body)
        if resp.status != 429 or attempt >= MAX_RETRIES:
            return resp
        delay = retry_delay(resp.headers, attempt)
        await resp.read()
        await asyncio.sleep(delay)
        attempt += 1


async def _open(
    client: UpstreamClient, url: str, headers: dict[str, str], body: UpstreamBody
) -> Response:
    try:
        return await client.open(url, headers, body)
    except client.transport_errors() as exc:
        raise _translate(exc) from exc


def _translate(exc: BaseException) -> BridgeError:
    if UpstreamClient.is_timeout(exc):
        return BridgeError(504, f"the provider did not answer within {READ_TIMEOUT:g} s")
    return BridgeError(502, f"the provider is unreachable: {type(exc).__name__}: {exc}")


async def read_body(resp: Response) -> bytes:
    try:
        return await resp.read()
    except UpstreamClient.transport_errors() as exc:
        raise _translate(exc) from exc


async def chunks(resp: Response) -> AsyncIterator[bytes]:
    """Body chunks as they arrive; transport failures mid-body become BridgeError."""
    try:
        async for chunk in resp.chunks():
            yield chunk
    except UpstreamClient.transport_errors() as exc:
        raise _translate(exc) from exc


MAX_IMAGE = 20 * 1024 * 1024  # Gemini's limit for a whole inline request


async def fetch_image(url: str) -> tuple[bytes, str]:
    """GET an image for inlining: bounded in size and time; failures are BridgeErrors."""
    import aiohttp  # not at the top: see UpstreamClient._make

    timeout = aiohttp.ClientTimeout(total=CONNECT_TIMEOUT)
    data = bytearray()
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url, proxy=proxy_for(url)) as resp,
        ):
            ctype = resp.headers.get("content-type", "").split(";")[0].strip()
            if resp.status != 200 or not ctype.startswith("image/"):
                raise BridgeError(502, f"answered {resp.status} {ctype or 'without a type'}")
            async for chunk in resp.content.iter_chunked(65536):
                data += chunk
                if len(data) > MAX_IMAGE:
                    raise BridgeError(413, f"larger than {MAX_IMAGE} bytes")
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise BridgeError(502, f"{type(exc).__name__}: {exc}") from exc
    return bytes(data), ctype
