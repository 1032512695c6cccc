"""The `ssh` tunnel provider against a real SSH server (harness/fakes/ssh_server.py), in-process:
the reverse forward reaches the target, an unknown host key is an error and never accepted, a
wrong option is named, and a tunnel whose server went away comes back online by itself."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from harness.daemon import free_port
from harness.runtime import running, settings_file, wait_status
from harness.ssh import SSHServer
from remote_app.tunnels.base import TunnelError
from remote_app.tunnels.ssh import SSHTunnel
from svcproject.assembly import build as build_parts


@pytest.fixture
def ssh(tmp_path: Path) -> Iterator[SSHServer]:
    server = SSHServer(tmp_path / "sshd").start()
    yield server
    server.stop()


@pytest.fixture
async def target() -> AsyncIterator[int]:
    """What the tunnel forwards to (the remote listener, in svc)."""
    app = web.Application()

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="behind the tunnel")

    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield port
    await runner.cleanup()


async def fetch(port: int) -> str:
    async with httpx.AsyncClient(timeout=5) as client:
        return (await client.get(f"http://127.0.0.1:{port}/")).text


async def test_the_reverse_forward_reaches_the_target(ssh: SSHServer, target: int) -> None:
    remote_port = free_port()
    urls: list[str] = []
    task = asyncio.ensure_future(SSHTunnel("vps", ssh.tunnel(remote_port)).run(target, urls.append))
    try:
        async with asyncio.timeout(20):
            while not urls:
                await asyncio.sleep(0.02)
        assert urls == [f"http://127.0.0.1:{remote_port}"]
        assert await fetch(remote_port) == "behind the tunnel"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    with pytest.raises(httpx.ConnectError):  # cancelled: the forward is gone with the connection
        await asyncio.wait_for(fetch(remote_port), 10)


async def test_without_a_template_the_url_is_the_first_the_server_prints(
    tmp_path: Path, target: int
) -> None:
    server = SSHServer(
        tmp_path / "sshd", banner="Connect to https://abc123.lhr.example.run now"
    ).start()
    try:
        options = {**server.tunnel(free_port()), "public_url": ""}
        options.pop("public_url")
        urls: list[str] = []
        task = asyncio.ensure_future(SSHTunnel("vps", options).run(target, urls.append))
        async with asyncio.timeout(20):
            while not urls:
                await asyncio.sleep(0.02)
        assert urls == ["https://abc123.lhr.example.run"]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        server.stop()


async def test_an_unknown_or_changed_host_key_is_an_error_never_accepted(
    ssh: SSHServer, target: int, tmp_path: Path
) -> None:
    import asyncssh

    stranger = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    remote_port = free_port()
    changed = {**ssh.tunnel(remote_port), "known_hosts": str(ssh.known_hosts("other", stranger))}
    with pytest.raises(TunnelError, match=r"host key .* is not in"):
        await SSHTunnel("vps", changed).run(target, lambda url: None)
    missing = {**ssh.tunnel(remote_port), "known_hosts": str(tmp_path / "none")}
    with pytest.raises(TunnelError, match=r"known_hosts: .* does not exist"):
        await SSHTunnel("vps", missing).run(target, lambda url: None)
    with pytest.raises(httpx.ConnectError):  # nothing was forwarded
        await fetch(remote_port)


async def test_a_server_it_cannot_reach_is_said_in_words(ssh: SSHServer, target: int) -> None:
    """Issue 43: "cannot reach the SSH server x:22: [Errno -2] Name or service not known" read
    as Python's own text; now the reason in words."""
    nowhere = {**ssh.tunnel(free_port()), "host": "svc-words-test.invalid", "port": 22}
    with pytest.raises(TunnelError) as failed:
        await SSHTunnel("vps", nowhere).run(target, lambda url: None)
    assert str(failed.value) == (
        "cannot reach svc-words-test.invalid:22 (the SSH server): name not resolved"
    )
    closed = free_port()
    with pytest.raises(TunnelError) as refused:
        await SSHTunnel("vps", {**ssh.tunnel(free_port()), "port": closed}).run(target, print)
    assert (
        str(refused.value)
        == f"cannot reach 127.0.0.1:{closed} (the SSH server): connection refused"
    )


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"prot": 22}, "tunnels.vps.prot: unknown option"),
        ({"port": "22"}, "tunnels.vps.port: must be a port number"),
        ({"host": ""}, "tunnels.vps.host: must be a non-empty string"),
        ({"key_file": "/no/such/key"}, "tunnels.vps.key_file: no such file"),
        ({"keepalive_s": 0}, "tunnels.vps.keepalive_s: must be a positive number"),
    ],
)
def test_a_wrong_option_is_named(ssh: SSHServer, change: dict, named: str) -> None:
    with pytest.raises(TunnelError, match=named):
        SSHTunnel("vps", {**ssh.tunnel(1), **change})


@pytest.mark.django_db(transaction=True)
async def test_a_tunnel_whose_server_went_away_comes_back_online_by_itself(
    ssh: SSHServer, target: int
) -> None:
    remote_port = free_port()
    runtime = build_parts(backoff_first_s=0.2)
    runtime.reach.remote_port = target
    with settings_file({"tunnels": {"vps": ssh.tunnel(remote_port)}}):
        async with running(runtime):
            await wait_status(runtime, "vps", "online")
            assert runtime.public_urls == {"vps": f"http://127.0.0.1:{remote_port}"}
            assert await fetch(remote_port) == "behind the tunnel"

            await asyncio.to_thread(ssh.stop)  # the server goes away
            failed = await wait_status(runtime, "vps", "error")
            assert failed["detail"] and runtime.public_urls == {}

            await asyncio.to_thread(ssh.start)  # and comes back, on the same port
            await wait_status(runtime, "vps", "online")
            assert await fetch(remote_port) == "behind the tunnel"

            await runtime.tunnels.stop("vps")  # the owner's stop holds until started
            assert "vps" not in runtime.supervisor.names("tunnels")
            await runtime.tunnels.start("vps")
            await wait_status(runtime, "vps", "online")


@pytest.mark.django_db(transaction=True)
async def test_a_tunnel_with_a_wrong_option_shows_error_with_the_option_named() -> None:
    runtime = build_parts(backoff_first_s=0.2)
    runtime.reach.remote_port = free_port()
    with settings_file({"tunnels": {"bad": {"provider": "ssh", "host": "h", "port": "x"}}}):
        async with running(runtime):
            failed = await wait_status(runtime, "bad", "error")
            assert failed["detail"] == "tunnels.bad.port: must be a port number (0–65535)"
