"""Which local user opened a loopback connection (core.local_peer), asked of the kernel both ways
(sock_diag and /proc/net), against connections a real second user's process holds open; and
the bridge's before-the-body rule on a connection (learned once per connection)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from bridge_app import gate
from core import local_peer, server_compat
from harness.other_user import OTHER_UID, popen_as_other, require_root
from svcproject import admission

FINDERS = [local_peer.by_sock_diag, local_peer.by_proc]

HOLDER = """
import socket, time
conn = socket.create_connection(({host!r}, {port}))
print("%s %d" % conn.getsockname()[:2], flush=True)
time.sleep(120)  # held until the test ends this process
"""


@contextmanager
def others_connection(family: int, host: str) -> Iterator[tuple[tuple, tuple, socket.socket]]:
    """A loopback connection opened and held by the other user's process: (its end, ours, the
    accepted socket)."""
    require_root()
    with socket.socket(family) as listener:
        listener.bind((host, 0))
        listener.listen(1)
        own = listener.getsockname()[:2]
        holder = popen_as_other(HOLDER.format(host=host, port=own[1]))
        try:
            line = holder.stdout.readline().split()  # type: ignore[union-attr]
            accepted, _ = listener.accept()
            with accepted:
                yield (line[0], int(line[1])), own, accepted
        finally:
            holder.kill()
            holder.wait(10)


@contextmanager
def own_connection(family: int, host: str) -> Iterator[tuple[tuple, tuple]]:
    with socket.socket(family) as listener:
        listener.bind((host, 0))
        listener.listen(1)
        with socket.create_connection(listener.getsockname()[:2]) as client:
            accepted, _ = listener.accept()
            with accepted:
                yield client.getsockname()[:2], listener.getsockname()[:2]


@pytest.mark.parametrize("finder", FINDERS, ids=["sock_diag", "proc"])
@pytest.mark.parametrize("family,host", [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_the_caller_is_the_user_that_opened_the_client_end(finder, family, host) -> None:
    with own_connection(family, host) as (client, server):
        assert [finder(s) for s in local_peer._spellings(client, server)] == [os.geteuid()]
    with others_connection(family, host) as (client, server, _):
        assert [finder(s) for s in local_peer._spellings(client, server)] == [OTHER_UID]
        # svc's own end of the same connection is svc's: asked that way round, it would pass.
        assert [finder(s) for s in local_peer._spellings(server, client)] == [os.geteuid()]


@pytest.mark.parametrize("finder", FINDERS, ids=["sock_diag", "proc"])
def test_a_caller_that_closed_its_end_is_nobody_not_root(finder) -> None:
    """A closed socket lingers (FIN_WAIT2, TIME_WAIT) with uid 0 and no inode."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        ends = client.getsockname(), listener.getsockname()
        client.close()
        with accepted:
            assert finder(local_peer._spellings(*ends)[0]) is None


def test_a_dual_stack_listener_finds_an_ipv4_caller() -> None:
    with socket.socket(socket.AF_INET6) as listener:
        listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        listener.bind(("::", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, peer = listener.accept()
            with accepted:
                assert peer[0] == "::ffff:127.0.0.1"
                assert client.getsockname()[1] == peer[1]
                assert local_peer.socket_uid(peer[:2], accepted.getsockname()[:2]) == os.geteuid()


def test_only_the_owner_and_root_may_call() -> None:
    assert gate.user_refusal(os.geteuid()) is None and gate.user_refusal(0) is None
    assert f"uid {OTHER_UID}" in (gate.user_refusal(OTHER_UID) or "")
    assert "could not tell" in (gate.user_refusal(None) or "")


def channel_of(client: tuple, server: tuple) -> SimpleNamespace:
    """What server_compat reads of daphne's channel: its transport's two ends."""
    ends = {"getPeer": client, "getHost": server}
    transport = SimpleNamespace(
        **{
            name: (lambda at=at: SimpleNamespace(host=at[0], port=at[1]))
            for name, at in ends.items()
        }
    )
    return SimpleNamespace(transport=transport)


def test_another_users_body_is_refused_on_the_headers_and_asked_once(monkeypatch) -> None:
    asked: list[tuple] = []
    looked_up = local_peer.socket_uid

    def counted(client: tuple, server: tuple) -> int | None:
        asked.append(client)
        return looked_up(client, server)

    monkeypatch.setattr(local_peer, "socket_uid", counted)
    path = b"/svc/local-api/p/s/anthropic/v1/messages"
    headers = [(b"host", b"127.0.0.1:8000")]
    with others_connection(socket.AF_INET, "127.0.0.1") as (client, server, _):
        channel = channel_of(client, server)
        for _ in range(3):  # three requests on one keep-alive connection
            head = admission.head_of(b"POST", path, headers, client[0], 1 << 20, server[1], channel)
            answer = admission.admit(head)
            assert answer is not None and answer.status == 403
            assert b'"permission_error"' in answer.body and b"uid %d" % OTHER_UID in answer.body
    assert len(asked) == 1  # once per connection
    with own_connection(socket.AF_INET, "127.0.0.1") as (client, server):
        channel = channel_of(client, server)
        head = admission.head_of(b"POST", path, headers, client[0], 1 << 20, server[1], channel)
        assert admission.admit(head) is None
    assert server_compat.connection_peer_uid(channel) == os.geteuid()
