"""Limits and credentials apply on the headers, before the body (contract §11, security finding 2),
over raw sockets against a live daemon."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.daemon import Daemon, migrated_home

MIB = 1024 * 1024
BRIDGE_LIMIT = 64 * MIB


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    settings = {
        "profiles": {"p1": {"provider": "openai-chat", "base_url": "http://127.0.0.1:9/v1"}}
    }
    server = Daemon(migrated_home(tmp_path_factory.mktemp("limits") / "home", settings)).start()
    yield server
    server.stop()


def head_only(daemon: Daemon, lines: list[str]) -> tuple[int, dict, bytes]:
    """Send a request's headers and none of its body; return the answer svc gives anyway,
    which must come within a second (the body never follows, so it cannot be waited for)."""
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        sent = time.monotonic()
        answer = read_answer(sock)
        waited = time.monotonic() - sent
    assert waited < 1, f"the answer took {waited:.2f} s"
    return answer


def read_answer(sock: socket.socket) -> tuple[int, dict, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"svc closed without answering: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    headers = {k.lower(): v for k, v in headers.items()}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(status_line.split()[1]), headers, body


def rss_kib(daemon: Daemon) -> int:
    assert daemon.proc is not None
    for line in Path(f"/proc/{daemon.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_an_unauthenticated_100_mib_upload_gets_401_on_its_headers(svc: Daemon) -> None:
    status, headers, body = head_only(
        svc,
        [
            "POST /api/settings HTTP/1.1",
            f"Host: 127.0.0.1:{svc.port}",
            "Content-Type: application/json",
            f"Content-Length: {100 * MIB}",
        ],
    )
    assert status == 401 and headers["connection"] == "close"
    assert json.loads(body)["error"]["code"] == "not_authenticated"


def test_a_bridge_body_announced_over_64_mib_gets_413_in_the_clients_dialect(svc: Daemon) -> None:
    status, _, body = head_only(
        svc,
        [
            "POST /svc/local-api/p1/t/openai-chat/v1/chat/completions HTTP/1.1",
            f"Host: 127.0.0.1:{svc.port}",
            "Content-Type: application/json",
            f"Content-Length: {BRIDGE_LIMIT + 1}",
        ],
    )
    assert status == 413
    assert "larger than" in json.loads(body)["error"]["message"]  # OpenAI's error shape


def test_an_owner_request_over_4_mib_gets_413_on_its_headers(svc: Daemon) -> None:
    status, _, _ = head_only(
        svc,
        [
            "PUT /api/settings HTTP/1.1",
            f"Host: 127.0.0.1:{svc.port}",
            f"Authorization: Bearer {svc.owner_token}",
            "Content-Type: application/json",
            f"Content-Length: {4 * MIB + 1}",
        ],
    )
    assert status == 413


def test_a_wrong_mcp_token_gets_its_json_rpc_error_on_the_headers(svc: Daemon) -> None:
    status, _, body = head_only(
        svc,
        [
            "POST /mcp HTTP/1.1",
            f"Host: 127.0.0.1:{svc.port}",
            "Authorization: Bearer nope",
            "Content-Type: application/json",
            f"Content-Length: {MIB}",
        ],
    )
    assert status == 401 and json.loads(body)["error"]["code"] == -32001


def test_a_chunked_body_is_cut_off_at_the_limit(svc: Daemon) -> None:
    chunk = b"x" * (256 * 1024)
    sent = 0
    with socket.create_connection(("127.0.0.1", svc.port), timeout=10) as sock:
        sock.sendall(
            (
                f"PUT /api/settings HTTP/1.1\r\nHost: 127.0.0.1:{svc.port}\r\n"
                f"Authorization: Bearer {svc.owner_token}\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\n\r\n"
            ).encode()
        )
        with pytest.raises(OSError):  # svc hangs up once the limit is passed
            for _ in range(200):  # 50 MiB offered
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
        # What got through: the 4 MiB limit plus what the kernel's loopback buffers took.
        assert sent < 4 * MIB + 16 * MIB, f"{sent / MIB:.0f} MiB sent before svc hung up"
        status, _, _ = read_answer(sock)
    assert status == 413


def test_ten_refused_uploads_leave_the_daemons_memory_flat(svc: Daemon) -> None:
    httpx.get(f"{svc.url}/api/sessions", headers=svc.owner_headers())  # warm
    before = rss_kib(svc)
    for _ in range(10):
        with socket.create_connection(("127.0.0.1", svc.port), timeout=10) as sock:
            sock.sendall(
                (
                    f"POST /api/settings HTTP/1.1\r\nHost: 127.0.0.1:{svc.port}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {100 * MIB}\r\n\r\n"
                ).encode()
            )
            try:
                for _ in range(400):  # push what the kernel takes until svc hangs up
                    sock.sendall(b"x" * (256 * 1024))
            except OSError:
                pass
    grown = rss_kib(svc) - before
    assert grown < 16 * 1024, f"the daemon grew by {grown} KiB"
