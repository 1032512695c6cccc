"""Why a connection failed, in words a person reads: "cannot reach api.telegram.org: name not
resolved" rather than `httpx.ConnectError: [Errno -2] Name or service not known`.

Two ways in. `reason_of(exc)` reads an exception and what it was raised from (python-telegram-bot
wraps httpx, which wraps httpcore, which wraps the OSError that says what happened). `found_in`
reads one line a program printed: Node (`getaddrinfo ENOTFOUND localtunnel.me`, `connect
ECONNREFUSED 127.0.0.1:1`), Go (`dial tcp: lookup api.trycloudflare.com on 127.0.0.11:53: no such
host`), curl, npm, aiohttp and Python's own wording. Both give one of the REASONS below; the
caller names the host, which it knows better than most error texts do. Chat channels
(channels_app) and tunnels (remote_app/tunnels) share it, so both say it the same way."""

from __future__ import annotations

import errno
import re
import socket
import ssl
from dataclasses import dataclass

NOT_RESOLVED = "name not resolved"
REFUSED = "connection refused"
UNREACHABLE = "network unreachable"
TIMED_OUT = "timed out"
RESET = "connection reset"
UNTRUSTED = "its TLS certificate is not trusted (a proxy in between, or a wrong clock?)"

_HOST = r"([A-Za-z0-9_][A-Za-z0-9_.-]*\.[A-Za-z0-9-]+)"  # a dotted name (never a bare word)
# (reason, pattern); the first pattern that matches a line wins, so name lookups come first:
# Go's "lookup X on 127.0.0.53:53: … connection refused" is a DNS failure, not a refused X.
_LINES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, re.compile(pattern, re.I))
    for reason, pattern in (
        (
            NOT_RESOLVED,
            rf"getaddrinfo (?:ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL) {_HOST}",
        ),
        (NOT_RESOLVED, rf"\blookup {_HOST}(?: on \S+)?: "),  # Go's resolver, any reason
        (NOT_RESOLVED, rf"Could not resolve host:? {_HOST}"),  # curl
        (
            NOT_RESOLVED,  # aiohttp: "Cannot connect to host X:443 ssl:default [Name or …]"
            rf"Cannot connect to host {_HOST}:\d+ .*\[(?:Name or service not known|Temporary "
            r"failure in name resolution|nodename nor servname|No address associated)",
        ),
        (
            NOT_RESOLVED,
            r"()(?:Name or service not known|Temporary failure in name resolution|nodename nor "
            r"servname provided|No address associated with hostname|\bENOTFOUND\b|\bEAI_AGAIN\b|"
            r"\[Errno -[235]\])",
        ),
        (
            UNTRUSTED,
            r"()(?:x509: certificate|certificate verify failed|CERT_HAS_EXPIRED|"
            r"UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT|self[- ]signed certificate|"
            r"unable to get local issuer certificate)",
        ),
        (REFUSED, r"ECONNREFUSED (\S+?)(?:,|$|\s)"),  # Node names the address it tried
        (REFUSED, r"dial tcp (\S+): connect: connection refused"),
        (REFUSED, r"Cannot connect to host ([^\s:]+):\d+ .*\[Connect call failed"),  # aiohttp
        (REFUSED, rf"connection refused: {_HOST}(?::\d+)?"),  # localtunnel's TunnelCluster.js
        (REFUSED, r"()(?:connection refused|Connect call failed|\[Errno 111\])"),
        (UNREACHABLE, r"()(?:ENETUNREACH|EHOSTUNREACH|network is unreachable|no route to host)"),
        (RESET, r"()(?:ECONNRESET|connection reset by peer)"),
        (
            TIMED_OUT,
            r"()(?:ETIMEDOUT|ESOCKETTIMEDOUT|i/o timeout|timed out|Client\.Timeout|context "
            r"deadline exceeded|ConnectTimeout)",
        ),
    )
)


@dataclass(frozen=True)
class Found:
    reason: str  # one of the constants above
    host: str = ""  # the host or address the text names, when it names one


def found_in(text: str) -> Found | None:
    """The network failure a line of output describes, if it describes one."""
    for reason, pattern in _LINES:
        if match := pattern.search(text):
            return Found(reason, (match.group(1) or "").strip("[]'\""))
    return None


def reason_of(exc: BaseException) -> str | None:
    """The network failure behind an exception, looking through what it was raised from."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if reason := _reason_of_one(current):
            return reason
        current = current.__cause__ or current.__context__
    found = found_in(str(exc))  # a library that kept only the text
    return found.reason if found else None


def _reason_of_one(exc: BaseException) -> str | None:
    if isinstance(exc, socket.gaierror):
        return NOT_RESOLVED
    if isinstance(exc, ssl.SSLCertVerificationError):
        return UNTRUSTED
    if isinstance(exc, ConnectionRefusedError):
        return REFUSED
    if isinstance(exc, ConnectionResetError):
        return RESET
    if isinstance(exc, TimeoutError) or type(exc).__name__.endswith(("Timeout", "TimeoutError")):
        return TIMED_OUT  # httpx.ConnectTimeout, aiohttp's ServerTimeoutError, asyncio's own
    if isinstance(exc, OSError) and exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
        return UNREACHABLE
    return None


def cannot_reach(host: str, reason: str, what: str = "") -> str:
    """The sentence: `cannot reach api.telegram.org (the Bot API): name not resolved`."""
    return f"cannot reach {host}{f' ({what})' if what else ''}: {reason}"
