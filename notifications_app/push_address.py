"""Where svc may send Web Push: an https URL whose host has public addresses only (issue 31,
finding 7; docs/notifications.md "Where pushes may go").

A subscription's endpoint is a URL the browser — or whoever holds a paired device — hands svc,
and an unauthenticated pairing request makes svc POST to every stored endpoint. Without this
rule that is a server-side request forgery: svc's own `/svc/` routes on loopback, a cloud
metadata service, anything on the owner's network. So the endpoint is checked twice:

- when it is saved (`check_endpoint`, the API: a 400 saying what to send), and
- when svc connects to send (`push_connect.PushSession`, handed to pywebpush): the host is
  resolved again and only checked addresses are connected to, so a DNS answer that changed
  since the save (DNS rebinding) cannot reach an internal address; no redirect is followed.

`notifications.push_private_hosts` in settings.json lists the hosts of a self-hosted push service
on the owner's own network: their private addresses are let through, https is still required.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import ssl
import threading

from yarl import URL

from core import config

logger = logging.getLogger(__name__)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

SETTING = "push_private_hosts"  # in settings.json `notifications`
HTTPS_ONLY = (
    "endpoint must be the subscription's https:// URL as the browser's PushManager.subscribe() "
    "gives it (https only, no user name or password)"
)
# IPv6 forms that carry an IPv4 address inside: judged by that address.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Never a public push service: local-use NAT64 (RFC 8215), the deprecated IPv4-compatible
# ::a.b.c.d and SIIT's IPv4-translated ::ffff:0:a.b.c.d. Python 3.12.1 calls them all global.
_NEVER = tuple(ipaddress.ip_network(n) for n in ("64:ff9b:1::/48", "::/96", "::ffff:0:0:0/96"))
_CGNAT = ipaddress.ip_network("100.64.0.0/10")


class AddressRefused(OSError):
    """An endpoint svc will not connect to; the message says why and what to send instead.

    An OSError because aiohttp turns an OSError raised by a resolver into its
    ClientConnectorDNSError, keeping the original as `os_error` for webpush.py to report."""


def _inner_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for: IPv4-mapped, 6to4, well-known NAT64."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def internal_kind(address: Address) -> str:
    """What makes `address` internal ("loopback", "private", …), or "" for a public one."""
    if isinstance(address, ipaddress.IPv6Address) and (inner := _inner_ipv4(address)):
        return internal_kind(inner)
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),  # ff0e::/16 and 224/4 count as "global"
        ("shared (CGNAT)", address in _CGNAT),
        ("private", address.is_private),
        ("reserved", address.is_reserved or any(address in net for net in _NEVER)),
    )
    for kind, found in checks:
        if found:
            return kind
    return "" if address.is_global else "non-public"


def refusal(address: Address, private_ok: bool) -> str:
    """Why svc will not connect to `address` ("" when it will). A host the owner listed in
    push_private_hosts may be private, but never "any address" or a multicast group."""
    kind = internal_kind(address)
    if private_ok and kind not in ("unspecified", "multicast"):
        return ""
    return kind


def host_key(host: str) -> str:
    """A host as push_private_hosts entries and endpoints are compared: lower case, no
    brackets or trailing dot, an IP literal in its canonical form."""
    host = host.strip().removeprefix("[").removesuffix("]").rstrip(".").lower()
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def private_hosts() -> frozenset[str]:
    """settings.json `notifications.push_private_hosts`, read leniently like the rest of the
    section: a malformed value is logged and counts as empty (nothing private let through)."""
    section = config.current_settings().raw.get("notifications", {})
    hosts = section.get(SETTING, []) if isinstance(section, dict) else []
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        logger.warning("settings.json notifications.%s must be a list of host names", SETTING)
        return frozenset()
    return frozenset(host_key(h) for h in hosts if h.strip())


def parse(endpoint: str) -> URL:
    """The endpoint as aiohttp will connect to it (yarl is what aiohttp parses URLs with, so
    the host checked is the host connected to). https only, no user info, a real port."""
    try:
        url = URL(endpoint)
        port = url.port
    except (ValueError, TypeError):
        raise AddressRefused(HTTPS_ONLY) from None
    if url.scheme != "https" or not url.raw_host or not port:
        raise AddressRefused(HTTPS_ONLY)
    if url.user is not None or url.password is not None:
        raise AddressRefused(HTTPS_ONLY)
    return url


def literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def refused_message(host: str, kind: str, resolved: str = "") -> str:
    """`resolved`: the address a host name resolved to ("" for an IP literal)."""
    a = "an" if kind[0] in "aeiou" else "a"
    where = f"resolves to {a} {kind} address ({resolved})" if resolved else f"is {a} {kind} address"
    return (
        f"endpoint's host {host} {where}: svc sends Web Push only to public addresses. Send the "
        "subscription of a public push service, or, for a push service on your own network, "
        f"list {host} in settings.json notifications.{SETTING}"
    )


def check_endpoint(endpoint: str) -> str:
    """`endpoint` when svc may send to it, else AddressRefused saying what to send. Resolves the
    host (blocking: for the API's request thread); every address must pass."""
    url = parse(endpoint)
    host = url.raw_host or ""
    private_ok = host_key(host) in private_hosts()
    if (address := literal(host)) is not None:
        if kind := refusal(address, private_ok):
            raise AddressRefused(refused_message(host, kind))
        return endpoint
    try:
        infos = socket.getaddrinfo(host, url.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise AddressRefused(
            f"endpoint's host {host} does not resolve: send the subscription's endpoint as "
            "the browser gave it"
        ) from None
    for info in infos:
        found = str(info[4][0])
        address = literal(found.partition("%")[0])  # a link-local answer may carry a zone
        kind = "unparsable" if address is None else refusal(address, private_ok)
        if kind:
            raise AddressRefused(refused_message(host, kind, found))
    return endpoint


_tls_lock = threading.Lock()
_tls: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


def tls_context() -> ssl.SSLContext:
    """The verifying TLS context for push services: the system's trust store, or the one
    SSL_CERT_FILE / SSL_CERT_DIR name (a private push service's CA). Made here rather than
    taken from aiohttp, which makes its own when first imported — in a daemon forked from a
    warm interpreter that can be before this process's environment was set. Loading the store
    blocks: call it off the loop first (webpush._prepare)."""
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _tls_lock:
        if (context := _tls.get(key)) is None:
            context = ssl.create_default_context()
            context.set_alpn_protocols(("http/1.1",))
            _tls[key] = context
        return context
