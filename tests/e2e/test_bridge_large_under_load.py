"""A large bridge request over a pooled provider connection the provider has closed, and one
relayed while both cores are busy.

Providers close idle keep-alive connections (uvicorn and Node after 5 s). If the FIN arrives while
svc's event loop is busy (decoding and parsing a 64 MiB request holds it 0.2 s on a quiet machine,
0.5 s with both cores busy), svc takes the dead connection from its pool and writes into it: the
provider resets it and aiohttp raises `ClientOSError: Can not write request body` (or
`ServerDisconnectedError` for a small body). svc sends such a request again on another connection
(bridge_app/upstream.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from harness.daemon import Daemon, migrated_home
from harness.fakes.bridge_setup import ALIAS
from harness.fakes.keepalive_provider import KeepAliveProvider

MIB64 = 64 * 1024 * 1024


def _body_of_size(size: int) -> bytes:
    def body(text: str) -> bytes:
        return json.dumps(
            {"model": ALIAS, "messages": [{"role": "user", "content": text}]}
        ).encode()

    text = body("x" * (size - len(body(""))))
    assert len(text) == size
    return text


def _post(daemon: Daemon, profile: str, content: bytes) -> httpx.Response:
    url = f"{daemon.url}/svc/local-api/{profile}/tests/openai-chat/v1/chat/completions"
    return httpx.post(
        url, content=content, headers={"Content-Type": "application/json"}, timeout=120
    )


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    dropping = KeepAliveProvider().start()  # resets reused connections when told to
    idle = KeepAliveProvider(idle_close_s=1.0).start()  # closes connections idle for 1 s
    settings = {"profiles": {"dropping": dropping.profile(ALIAS), "idle": idle.profile(ALIAS)}}
    home = migrated_home(tmp_path_factory.mktemp("bridge-large") / "home", settings)
    # These tests are about connections, not the read timeout: a generous one.
    daemon = Daemon(home, env={"SVC_BRIDGE_READ_TIMEOUT": "60"}).start()
    yield daemon, dropping, idle
    daemon.stop()
    dropping.stop()
    idle.stop()


@pytest.mark.parametrize("size", [200, MIB64], ids=["small", "64MiB"])
def test_a_pooled_connection_the_provider_resets_as_it_is_reused_is_retried_on_a_fresh_one(
    bridge, size: int
) -> None:
    daemon, fake, _ = bridge
    warm = _post(daemon, "dropping", _body_of_size(200))  # leaves a connection in svc's pool
    assert warm.status_code == 200, warm.text[:300]
    pooled = fake.received[-1].connection
    fake.drop_reused = 1
    r = _post(daemon, "dropping", _body_of_size(size))
    assert r.status_code == 200, r.text[:300]
    dropped, sent = fake.received[-2:]
    # The pooled connection was reset with the request half-read: svc sent it again, whole, on a
    # connection of its own, and the client never knew.
    assert (dropped.connection, dropped.answered) == (pooled, False)
    assert sent.answered and sent.connection not in {rec.connection for rec in fake.received[:-1]}
    assert sent.got == sent.declared == dropped.declared >= size - 100  # the alias is renamed
    assert r.json()["choices"][0]["message"]["content"] == f"received {sent.got} bytes"


def test_a_provider_that_resets_fresh_connections_too_is_a_502_after_one_more_try(bridge) -> None:
    daemon, fake, _ = bridge
    assert _post(daemon, "dropping", _body_of_size(200)).status_code == 200
    seen = len(fake.received)
    fake.drop_any = 5
    r = _post(daemon, "dropping", _body_of_size(MIB64))
    # The pooled connection's reset is retried; the fresh connection's is the provider's answer.
    assert r.status_code == 502 and "the provider is unreachable" in r.json()["error"]["message"]
    pooled, fresh = fake.received[seen:]
    assert not pooled.answered and not fresh.answered and pooled.connection != fresh.connection
    assert fake.drop_any == 3
    fake.drop_any = 0


def test_64_mib_is_relayed_whole_while_two_busy_loops_load_both_cores(bridge) -> None:
    daemon, _, fake = bridge
    body = _body_of_size(MIB64)
    cpus = sorted(os.sched_getaffinity(0))
    hogs = [  # one busy loop pinned to each core (the suite's machine has two)
        subprocess.Popen(
            [sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile 1: pass"]
        )
        for cpu in (cpus[0], cpus[-1])
    ]
    try:
        for _ in range(2):  # the second goes out over a connection pooled by the first
            r = _post(daemon, "idle", body)
            assert r.status_code == 200, r.text[:300]
            sent = fake.received[-1]
            assert sent.answered and sent.got == sent.declared >= MIB64 - 100
            assert r.json()["choices"][0]["message"]["content"] == f"received {sent.got} bytes"
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
