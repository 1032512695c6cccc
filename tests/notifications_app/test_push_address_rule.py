"""The address rule behind Web Push's endpoints (notifications_app/push_address.py): which
addresses are public, in every IPv6 spelling of an IPv4 one, what notifications.push_private_hosts
lets through, and how that setting is read. The API and the sends that use it are tested in
test_push_endpoints.py."""

from __future__ import annotations

import ipaddress

import pytest

from harness.runtime import settings_file
from notifications_app import push_address

INTERNAL = {
    "127.0.0.2": "loopback",
    "::1": "loopback",
    "::ffff:127.0.0.1": "loopback",  # IPv4-mapped
    "2002:7f00:1::": "loopback",  # 6to4 around 127.0.0.1
    "64:ff9b::7f00:1": "loopback",  # NAT64 around 127.0.0.1
    "64:ff9b::a00:1": "private",  # NAT64 around 10.0.0.1
    "::ffff:a9fe:a9fe": "link-local",  # 169.254.169.254, mapped
    "10.0.0.1": "private",
    "172.16.0.1": "private",
    "192.168.1.1": "private",
    "fc00::1": "private",
    "169.254.169.254": "link-local",
    "fe80::1": "link-local",
    "100.64.0.1": "shared (CGNAT)",
    "224.0.0.251": "multicast",
    "ff0e::1": "multicast",  # Python calls global-scope multicast "global"
    "0.0.0.0": "unspecified",
    "::": "unspecified",
    "::ffff:0.0.0.0": "unspecified",
    "::7f00:1": "reserved",  # IPv4-compatible, deprecated (Python 3.12.1 calls it global)
    "64:ff9b:1::1": "reserved",  # local-use NAT64
    "::ffff:0:808:808": "reserved",  # SIIT IPv4-translated
    "240.0.0.1": "private",
    "192.0.2.1": "private",  # documentation
}
PUBLIC = ["1.1.1.1", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]


@pytest.mark.parametrize("address", INTERNAL)
def test_it_names_what_makes_an_address_internal(address: str) -> None:
    assert push_address.internal_kind(ipaddress.ip_address(address)) == INTERNAL[address]
    assert push_address.refusal(ipaddress.ip_address(address), private_ok=False)


@pytest.mark.parametrize("address", PUBLIC)
def test_it_lets_a_public_address_through(address: str) -> None:
    assert push_address.internal_kind(ipaddress.ip_address(address)) == ""


def test_a_listed_host_may_be_private_but_never_any_address_or_a_group() -> None:
    allowed = [a for a in INTERNAL if not push_address.refusal(ipaddress.ip_address(a), True)]
    assert set(INTERNAL) - set(allowed) == {
        "0.0.0.0",
        "::",
        "::ffff:0.0.0.0",
        "224.0.0.251",
        "ff0e::1",
    }


def test_push_private_hosts_is_read_in_one_spelling_and_a_bad_value_lets_nothing_through() -> None:
    listed = {"notifications": {"push_private_hosts": ["Push.Home.", "[::1]", "0:0::2", " "]}}
    with settings_file(listed):
        assert push_address.private_hosts() == {"push.home", "::1", "::2"}
    for bad in ("push.home", [1], {"a": 1}):
        with settings_file({"notifications": {"push_private_hosts": bad}}):
            assert push_address.private_hosts() == frozenset()
    with settings_file({"notifications": "nonsense"}):
        assert push_address.private_hosts() == frozenset()
