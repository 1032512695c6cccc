"""The fake targets: a strict local Web Push service over TLS and an Apprise json:// sink, each
served from a thread of its own; and names the test resolves itself."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.fakes.apprise_target import JsonSink
from harness.fakes.push_endpoint import PushCA, PushEndpoint, with_private_hosts
from harness.runtime import kept_settings

PUBLIC_ADDRESS = "1.1.1.1"  # what the test's public push service names resolve to (never dialled)


@pytest.fixture(scope="session")
def push_ca(tmp_path_factory: pytest.TempPathFactory) -> PushCA:
    return PushCA(Path(tmp_path_factory.mktemp("push-ca")))


@pytest.fixture
def push(push_ca: PushCA, monkeypatch: pytest.MonkeyPatch) -> Iterator[PushEndpoint]:
    """The push service on https://127.0.0.1:<port>, set up as a deployment with a private push
    service is: its CA trusted through SSL_CERT_FILE, and 127.0.0.1 in
    notifications.push_private_hosts (a test writing its own settings.json includes it with
    `with_private_hosts`)."""
    from core import config

    monkeypatch.setenv("SSL_CERT_FILE", str(push_ca.cert_file))
    server = PushEndpoint(push_ca).start()
    with kept_settings():
        config.write_settings(with_private_hosts(dict(config.current_settings().raw)))
        yield server
    server.stop()


@pytest.fixture
def plain() -> Iterator[PushEndpoint]:
    """The same service on plain http: where svc must never send."""
    server = PushEndpoint().start()
    yield server
    server.stop()


@pytest.fixture
def sink() -> Iterator[JsonSink]:
    server = JsonSink().start()
    yield server
    server.stop()


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Host name → the address it resolves to, for names the test decides; every other name
    resolves as usual. Read at every lookup, by svc's check on saving and on connecting alike
    (both end in socket.getaddrinfo), so a test may change an answer between the two as a
    rebinding DNS server does."""
    answers = {"push.example.test": PUBLIC_ADDRESS, "push.nowhere.test": ""}  # "": no such name
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if answers.get(name) == "":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(answers.get(name, host), port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers
