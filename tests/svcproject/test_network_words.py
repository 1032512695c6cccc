"""core/network_words (issue 43): a connection that failed, in words — from the real errors of
the libraries svc uses (httpx under python-telegram-bot, aiohttp under slack-sdk, asyncio) and
from lines the real tools printed (quoted in docs/tunnel-providers.md)."""

from __future__ import annotations

import asyncio

import aiohttp
import httpx
import pytest
from telegram import Bot
from telegram.error import NetworkError

from core import network_words
from core.network_words import NOT_RESOLVED, REFUSED, Found, found_in, reason_of
from harness.daemon import free_port

NOWHERE = "svc-words-test.invalid"  # .invalid never resolves (RFC 2606)


async def test_the_errors_of_the_libraries_svc_uses_read_as_words() -> None:
    with pytest.raises(httpx.ConnectError) as httpx_failed:
        async with httpx.AsyncClient() as client:
            await client.get(f"http://{NOWHERE}/")
    assert reason_of(httpx_failed.value) == NOT_RESOLVED

    # The issue's own: python-telegram-bot says `httpx.ConnectError: [Errno -2] …`.
    bot = Bot("123:abc", base_url=f"http://{NOWHERE}/bot")
    with pytest.raises(NetworkError) as telegram_failed:
        await bot.initialize()
    assert "ConnectError" in str(telegram_failed.value)
    assert reason_of(telegram_failed.value) == NOT_RESOLVED

    with pytest.raises(aiohttp.ClientConnectorError) as aiohttp_failed:
        async with aiohttp.ClientSession() as session:
            await session.get(f"http://{NOWHERE}/")
    assert reason_of(aiohttp_failed.value) == NOT_RESOLVED

    port = free_port()  # nothing listens there
    with pytest.raises(OSError) as refused:
        await asyncio.open_connection("127.0.0.1", port)
    assert reason_of(refused.value) == REFUSED
    with pytest.raises(httpx.ConnectError) as httpx_refused:
        async with httpx.AsyncClient() as client:
            await client.get(f"http://127.0.0.1:{port}/")
    assert reason_of(httpx_refused.value) == REFUSED
    assert reason_of(ValueError("a bad value")) is None


@pytest.mark.parametrize(
    ("line", "found"),
    [
        # localtunnel 2.0.2's `debug` line (DEBUG=localtunnel:client), seen on this machine.
        (
            "2026-11-28T23:23:41.938Z localtunnel:client tunnel server offline: getaddrinfo "
            "ENOTFOUND localtunnel.me, retry 1s",
            Found(NOT_RESOLVED, "localtunnel.me"),
        ),
        (
            "2026-11-28T23:23:47.573Z localtunnel:client tunnel server offline: connect "
            "ECONNREFUSED 127.0.0.1:1, retry 1s",
            Found(REFUSED, "127.0.0.1:1"),
        ),
        # npm 11.19.1 with its registry's name not resolving, seen on this machine.
        (
            "npm error network request to https://registry.npmjs.org/localtunnel failed, reason: "
            "getaddrinfo ENOTFOUND registry.npmjs.org",
            Found(NOT_RESOLVED, "registry.npmjs.org"),
        ),
        # cloudflared issue #555 (a quick tunnel), and its edge discovery's log line (a named
        # tunnel, edgediscovery/allregions/discovery.go:124 with zerolog's error field).
        (
            'failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel": dial '
            "tcp: lookup api.trycloudflare.com on 127.0.0.11:53: no such host",
            Found(NOT_RESOLVED, "api.trycloudflare.com"),
        ),
        (
            "2024-05-02T10:00:00Z ERR edge discovery: error looking up Cloudflare edge IPs: the "
            'DNS query failed error="lookup _v2-origintunneld._tcp.argotunnel.com on '
            '127.0.0.53:53: dial udp 127.0.0.53:53: connect: connection refused" event=0',
            Found(NOT_RESOLVED, "_v2-origintunneld._tcp.argotunnel.com"),
        ),
        ("dial tcp 198.41.192.7:7844: connect: connection refused", Found(REFUSED, "198.41.192.7:7844")),  # noqa: E501
        ("httpx.ConnectError: [Errno -2] Name or service not known", Found(NOT_RESOLVED)),
        ("dial tcp 1.2.3.4:443: connect: network is unreachable", Found("network unreachable")),
        ("x509: certificate signed by unknown authority", Found(network_words.UNTRUSTED)),
        ("Node.js v20.20.2", None),
        ("your url is: https://odd-moth-12.loca.lt", None),
    ],
)  # fmt: skip
def test_the_real_tools_lines_read_as_words(line: str, found: Found | None) -> None:
    assert found_in(line) == found


def test_the_sentence() -> None:
    said = network_words.cannot_reach("api.telegram.org", NOT_RESOLVED, "the Telegram Bot API")
    assert said == "cannot reach api.telegram.org (the Telegram Bot API): name not resolved"
