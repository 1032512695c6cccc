"""The check on connect (push_address.py says why): what pywebpush is given as its aiohttp
session, so the address svc connects to is one the rule allowed at that moment. Loaded with
pywebpush, off the loop (webpush._prepare): aiohttp is not needed for svc to start."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from notifications_app.push_address import (
    AddressRefused,
    host_key,
    literal,
    parse,
    private_hosts,
    refusal,
    refused_message,
    tls_context,
)


class CheckedResolver(AbstractResolver):
    """aiohttp's resolver for push sends: resolves as aiohttp would, then returns only the
    addresses the rule allows — what the connector connects to is what was checked."""

    def __init__(self, private: frozenset[str]) -> None:
        self._private = private
        self._inner = ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        private_ok = host_key(host) in self._private
        found = await self._inner.resolve(host, port, family)
        kept, why = [], ""
        for result in found:
            address = literal(result["host"].partition("%")[0])
            kind = "unparsable" if address is None else refusal(address, private_ok)
            if kind:
                why = why or refused_message(host, kind, result["host"])
            else:
                kept.append(result)
        if not kept:
            raise AddressRefused(why or f"endpoint's host {host} has no address")
        return kept

    async def close(self) -> None:
        await self._inner.close()


class PushSession:
    """What pywebpush is given as its aiohttp session (it calls only `post`): one connection's
    worth of checks around a real ClientSession — https only, an IP literal host checked here
    (aiohttp never asks the resolver about one), a name through CheckedResolver, no redirect
    followed (a 3xx is the answer, and a failed delivery), no proxy from the environment (the
    proxy, not the push service, would be what the resolver checked)."""

    def __init__(self, private: frozenset[str]) -> None:
        self._private = private
        connector = aiohttp.TCPConnector(
            resolver=CheckedResolver(private),
            ssl=tls_context(),
            use_dns_cache=False,  # each send resolves and checks afresh
        )
        self._session = aiohttp.ClientSession(connector=connector, trust_env=False)

    async def post(self, endpoint: str, **kwargs: Any) -> aiohttp.ClientResponse:
        url = parse(endpoint)  # a subscription stored before the rule may still be http://
        host = url.raw_host or ""
        address = literal(host)
        if address is not None and (kind := refusal(address, host_key(host) in self._private)):
            raise AddressRefused(refused_message(host, kind))
        kwargs["allow_redirects"] = False
        return await self._session.post(endpoint, **kwargs)

    async def __aenter__(self) -> PushSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._session.close()


async def session() -> PushSession:
    """A PushSession with the push_private_hosts in force now (settings read off the loop)."""
    return PushSession(await asyncio.to_thread(private_hosts))
