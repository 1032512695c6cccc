"""The process tunnels (cloudflared, tailscale funnel, localtunnel through npx, command),
in-process (ngrok: test_tunnel_ngrok.py).

The process tunnels run against stand-ins (tests/fixtures/tunnel-standins/), put first on PATH:
each prints what the real tool prints (docs/tunnel-providers.md says where each format was read)
and really forwards TCP to the target. The host in the URL a stand-in prints is made up, as the
real one would be a public name (`….trycloudflare.com`, `….ts.net`, `….loca.lt`): svc's patterns
are the real formats' and are not widened for tests. So a test checks the URL svc reported
against what the stand-in printed, and fetches through the relay's loopback port, which the
stand-in writes to STANDIN_PORT_FILE — the fetch proves the forward, not the public name.
`command` needs no such step: the relay it runs prints its loopback URL, which is fetched as is."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from harness.daemon import free_port
from harness.runtime import running, settings_file, wait_status
from remote_app.tunnels import process, registry
from remote_app.tunnels.base import TunnelError
from remote_app.tunnels.process import ProcessTunnel
from svcproject.assembly import build as build_parts
from tests.remote_app.tunnel_tasks import stop, until_up

STANDINS = Path(__file__).resolve().parents[1] / "fixtures" / "tunnel-standins"
BODY = "behind the tunnel"


@pytest.fixture
async def target() -> AsyncIterator[int]:
    """What the tunnel forwards to (the remote listener, in svc)."""
    app = web.Application()

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text=BODY)

    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield port
    await runner.cleanup()


@pytest.fixture
def python_bin(tmp_path: Path) -> Path:
    """A folder whose `python3` is this interpreter: the stand-ins' `#!/usr/bin/env python3`
    then finds it whatever else is on PATH (and without pyenv's shim, for speed)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "python3").symlink_to(os.path.realpath(sys.executable))
    return folder


@pytest.fixture
def standins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, python_bin: Path) -> Path:
    """The stand-ins first on PATH; returns the file where a stand-in records its relay."""
    monkeypatch.setenv(
        "PATH", os.pathsep.join([str(STANDINS), str(python_bin), os.environ["PATH"]])
    )
    facts = tmp_path / "standin.json"
    monkeypatch.setenv("STANDIN_PORT_FILE", str(facts))
    monkeypatch.delenv("STANDIN_MODE", raising=False)
    return facts


async def facts_of(path: Path) -> dict[str, Any]:
    async with asyncio.timeout(20):
        while not path.exists():
            await asyncio.sleep(0.02)
    return json.loads(path.read_text())


async def fetch(url: str) -> str:
    async with httpx.AsyncClient(timeout=5) as client:
        return (await client.get(url)).text


def gone(pid: int) -> bool:
    """No such process, or a zombie (nothing reaps orphans in some containers)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before the read, or during it
        return True


async def wait_gone(pid: int) -> None:
    async with asyncio.timeout(20):
        while not gone(pid):
            await asyncio.sleep(0.02)


def build(provider: str, **options: Any) -> ProcessTunnel:
    tunnel = registry.build("t", {"provider": provider, **options})
    assert isinstance(tunnel, ProcessTunnel)
    return tunnel


def argv(provider: str, port: int, options: dict[str, Any]) -> list[str]:
    """What svc runs (after the executable), as docs/tunnel-providers.md says."""
    origin = f"http://127.0.0.1:{port}"
    return {
        "cloudflared": ["tunnel", "--no-autoupdate", "--url", origin],
        "tailscale": ["funnel", f"--https={options.get('https_port', 443)}", origin],
        "localtunnel": ["--yes", "localtunnel", "--port", str(port)]
        + (["--host", options["host"]] if "host" in options else []),
    }[provider]


UP_CASES = [
    ("cloudflared", {}, "https://svc-standin-quick-tunnel.trycloudflare.com"),
    ("tailscale", {}, "https://svc-standin.tail4f2e1.ts.net"),
    ("tailscale", {"https_port": 8443}, "https://svc-standin.tail4f2e1.ts.net:8443"),
    ("localtunnel", {}, "https://svc-standin.loca.lt"),
    ("localtunnel", {"host": "https://lt.example.org"}, "https://svc-standin.lt.example.org"),
]


@pytest.mark.parametrize(("provider", "options", "url"), UP_CASES)
async def test_the_tunnel_comes_up_forwards_and_leaves_nothing_when_cancelled(
    standins: Path, target: int, provider: str, options: dict, url: str
) -> None:
    urls: list[str] = []
    task = asyncio.ensure_future(build(provider, **options).run(target, urls.append))
    try:
        await until_up(task, urls)
        assert urls == [url]
        facts = await facts_of(standins)
        assert facts["argv"][-len(argv(provider, target, options)) :] == argv(
            provider, target, options
        )
        assert await fetch(f"http://127.0.0.1:{facts['port']}/") == BODY
    finally:
        await stop(task)
    await wait_gone(facts["pid"])  # for npx: its child, the one that relays — the whole group
    with pytest.raises(httpx.ConnectError):
        await fetch(f"http://127.0.0.1:{facts['port']}/")


async def test_a_named_cloudflared_tunnel_takes_its_token_by_environment(
    standins: Path, target: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"token_env": "SVC_TEST_CF_TOKEN", "public_url": "https://svc.example.com/"}
    monkeypatch.delenv("SVC_TEST_CF_TOKEN", raising=False)
    with pytest.raises(TunnelError, match=r"SVC_TEST_CF_TOKEN is not set .*Zero Trust"):
        await build("cloudflared", **options).run(target, lambda url: None)

    monkeypatch.setenv("SVC_TEST_CF_TOKEN", "eyJzdGFuZC1pbiB0b2tlbiJ9")
    urls: list[str] = []
    task = asyncio.ensure_future(build("cloudflared", **options).run(target, urls.append))
    try:
        await until_up(task, urls)
        assert urls == ["https://svc.example.com"]  # the option's, once a connection registered
        facts = await facts_of(standins)
        assert facts["tunnel_token"] == "eyJzdGFuZC1pbiB0b2tlbiJ9"
        origin = f"http://127.0.0.1:{target}"
        assert facts["argv"] == ["tunnel", "--no-autoupdate", "run", "--url", origin]  # no token
        assert await fetch(f"http://127.0.0.1:{facts['port']}/") == BODY
    finally:
        await stop(task)
    await wait_gone(facts["pid"])


async def test_command_runs_any_tool_and_reads_its_url_with_the_pattern(
    standins: Path, target: int
) -> None:
    tunnel = build(
        "command",
        command=["python3", str(STANDINS / "_standin.py"), "relay", "{port}"],
        url_pattern=r"forwarding (http://127\.0\.0\.1:\d+)",
    )
    urls: list[str] = []
    task = asyncio.ensure_future(tunnel.run(target, urls.append))
    try:
        await until_up(task, urls)
        assert await fetch(urls[0] + "/") == BODY  # the URL it printed, fetched as is
        pid = (await facts_of(standins))["pid"]
    finally:
        await stop(task)
    await wait_gone(pid)


def test_the_patterns_read_the_real_tools_lines() -> None:
    """Lines the real tools printed, as quoted in public bug reports (docs/tunnel-providers.md)."""
    box = (
        "2023-04-18T14:06:49Z INF |  https://buffalo-marco-cardiff-motel.trycloudflare.com"
        "                                     |"
    )  # cloudflared issue #946
    assert process.CLOUDFLARED_URL.search(box).group(0) == (
        "https://buffalo-marco-cardiff-motel.trycloudflare.com"
    )
    failed = (
        'failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel": dial tcp: '
        "lookup api.trycloudflare.com on 127.0.0.11:53: no such host"
    )  # cloudflared issue #555
    assert process.CLOUDFLARED_URL.search(failed) is None
    for registered in (
        "2024-11-27T11:12:44Z INF Registered tunnel connection connIndex=3 connection=f7c6f7af-"
        "0cd5-4dde-ac9a-a0f4648e78aa event=0 ip=198.41.200.33 location=lhr01 protocol=http2",
        "2022-06-01T16:23:12Z INF Connection c206cf44-945f-4c3c-a85c-af60c6338dc2 registered "
        "connIndex=0 location=ORD",
    ):  # app-cloudflared issue #742, cloudflared issue #657
        assert process.CLOUDFLARED_READY.search(registered)
    assert process.TAILSCALE_URL.search("https://laptop.tail1234.ts.net/").group(0) == (
        "https://laptop.tail1234.ts.net"
    )
    assert process.TAILSCALE_URL.search("https://login.tailscale.com/f/funnel?node=n1") is None
    said = process.LOCALTUNNEL_URL.search("your url is: https://odd-moth-12.loca.lt")
    assert said.group(1) == "https://odd-moth-12.loca.lt"


async def test_a_command_that_cannot_run_is_an_error(tmp_path: Path) -> None:
    program = tmp_path / "not-a-program"
    program.write_bytes(b"\x00\x01 not an executable format")
    program.chmod(0o755)
    with pytest.raises(TunnelError, match=r"cannot run .*not-a-program: Exec format error"):
        await build("command", command=[str(program)]).run(free_port(), lambda url: None)


@pytest.mark.parametrize(
    ("provider", "options", "fix"),
    [
        ("cloudflared", {}, r"cloudflared is not installed .*developers\.cloudflare\.com"),
        ("tailscale", {}, r"tailscale is not installed .*tailscale\.com/download"),
        ("localtunnel", {}, r"npx is not installed .*nodejs\.org"),
        ("command", {"command": ["svc-no-such-tool"]}, r"tunnels\.t\.command: 'svc-no-such-tool'"),
    ],
)
async def test_a_missing_executable_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, provider: str, options: dict, fix: str
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TunnelError, match=fix):
        await build(provider, **options).run(free_port(), lambda url: None)


@pytest.mark.parametrize(
    ("provider", "said"),
    [
        # Its error names api.trycloudflare.com: not taken for the tunnel's URL.
        ("cloudflared", 'failed to request quick Tunnel: Post "https://api.trycloudflare'),
        ("tailscale", "failed to connect to local tailscaled process"),
        ("localtunnel", "Error: connection refused: localtunnel.me"),  # not "Node.js v20…"
    ],
)
async def test_a_tool_that_exits_is_an_error_with_its_code_and_what_it_said(
    standins: Path, monkeypatch: pytest.MonkeyPatch, target: int, provider: str, said: str
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "exit")
    urls: list[str] = []
    with pytest.raises(TunnelError, match="exited with code 3") as failed:
        await build(provider).run(target, urls.append)
    assert said in str(failed.value)
    assert urls == []


@pytest.mark.parametrize("provider", ["cloudflared", "tailscale", "localtunnel"])
async def test_a_tool_that_ends_after_coming_up_is_an_error(
    standins: Path, monkeypatch: pytest.MonkeyPatch, target: int, provider: str
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "crash")
    urls: list[str] = []
    # After the sentence read from it when there is one (test_tunnel_failures.py).
    with pytest.raises(TunnelError, match=r"exited with code 3(; | \()it said: "):
        async with asyncio.timeout(20):
            await build(provider).run(target, urls.append)
    assert len(urls) == 1


@pytest.mark.parametrize(
    ("provider", "said"),
    [
        # Its time stamp left out of the quote.
        ("cloudflared", "it said: INF Requesting new quick Tunnel on trycloudflare.com..."),
        # The link to enable Funnel is not the funnel's URL, but it is what the person needs.
        ("tailscale", "it said: https://login.tailscale.com/f/funnel\\?node="),
        ("localtunnel", "it printed nothing"),
    ],
)
async def test_a_tool_that_prints_no_url_in_time_is_an_error(
    standins: Path, monkeypatch: pytest.MonkeyPatch, target: int, provider: str, said: str
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "silent")
    with pytest.raises(TunnelError, match=f"printed no URL within 0.5 s(; | \\(){said}"):
        await build(provider, url_timeout_s=0.5).run(target, lambda url: None)
    await wait_gone((await facts_of(standins))["pid"])


@pytest.mark.parametrize("provider", ["cloudflared", "localtunnel"])
async def test_a_tool_that_ignores_sigterm_is_killed(
    standins: Path, monkeypatch: pytest.MonkeyPatch, target: int, provider: str
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "stubborn")  # for npx: its child ignores it, npx does not
    tunnel = build(provider)
    tunnel.kill_after_s = 0.3
    urls: list[str] = []
    task = asyncio.ensure_future(tunnel.run(target, urls.append))
    try:
        await until_up(task, urls)
        pid = (await facts_of(standins))["pid"]
    finally:
        await stop(task)
    await wait_gone(pid)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"provider": "cloudflared", "tokn_env": "X"}, "tunnels.t.tokn_env: unknown option"),
        (
            {"provider": "cloudflared", "public_url": "https://a.example"},
            "tunnels.t.public_url: only for a named tunnel",
        ),
        ({"provider": "cloudflared", "token_env": "X"}, "tunnels.t.public_url: required"),
        (
            {"provider": "cloudflared", "token_env": "X", "public_url": "a.example"},
            "tunnels.t.public_url: must be an http:// or https:// URL",
        ),
        ({"provider": "cloudflared", "token_env": ""}, "tunnels.t.token_env: must be a non-empty"),
        (
            {"provider": "tailscale", "https_port": 444},
            "tunnels.t.https_port: Funnel serves only 443, 8443 or 10000",
        ),
        ({"provider": "tailscale", "https_port": "443"}, "tunnels.t.https_port: must be a port"),
        ({"provider": "localtunnel", "port": 8080}, "tunnels.t.port: unknown option"),
        ({"provider": "localtunnel", "host": ""}, "tunnels.t.host: must be a non-empty string"),
        ({"provider": "localtunnel", "host": "lt.example"}, "tunnels.t.host: must be an http"),
        (
            {"provider": "localtunnel", "url_timeout_s": 0},
            "tunnels.t.url_timeout_s: must be a positive number of seconds",
        ),
        ({"provider": "command"}, "tunnels.t.command: must be a non-empty list of strings"),
        (
            {"provider": "command", "command": "bore local 8080"},
            "tunnels.t.command: must be a non-empty list of strings",
        ),
        (
            {"provider": "command", "command": ["bore"], "url_pattern": "(https://"},
            "tunnels.t.url_pattern: not a valid regular expression",
        ),
        (
            {"provider": "command", "command": ["bore"], "url_pattern": 3},
            "tunnels.t.url_pattern: must be a non-empty string",
        ),
        ({"provider": "ngrok", "token": "x"}, "tunnels.t.token: unknown option"),
        (
            {"provider": "ngrok", "authtoken_env": ""},
            "tunnels.t.authtoken_env: must be a non-empty string",
        ),
        (
            {"provider": "ngrok", "domain": "https://a.ngrok.app"},
            "tunnels.t.domain: a host name only",
        ),
    ],
)
def test_a_wrong_option_is_named(options: dict, named: str) -> None:
    with pytest.raises(TunnelError, match=re.escape(named)):
        registry.build("t", options)


@pytest.mark.django_db(transaction=True)
async def test_as_services_one_is_online_and_a_missing_executable_is_an_error_saying_why(
    standins: Path, monkeypatch: pytest.MonkeyPatch, target: int, python_bin: Path
) -> None:
    # No cloudflared on PATH, even if this machine has one; the tailscale stand-in is there.
    (python_bin / "tailscale").symlink_to(STANDINS / "tailscale")
    path = os.environ["PATH"].split(os.pathsep)[2:]  # what was there before `standins`
    kept = [folder for folder in path if not Path(folder, "cloudflared").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join([str(python_bin), *kept]))
    runtime = build_parts(backoff_first_s=0.2)
    runtime.reach.remote_port = target
    tunnels = {"funnel": {"provider": "tailscale"}, "quick": {"provider": "cloudflared"}}
    with settings_file({"tunnels": tunnels}):
        async with running(runtime):
            online = await wait_status(runtime, "funnel", "online")
            assert runtime.public_urls["funnel"] == "https://svc-standin.tail4f2e1.ts.net"
            assert online["detail"] == f"https://svc-standin.tail4f2e1.ts.net → 127.0.0.1:{target}"
            failed = await wait_status(runtime, "quick", "error")
            assert failed["detail"].startswith("cloudflared is not installed (not on PATH)")
            pid = (await facts_of(standins))["pid"]
    await wait_gone(pid)  # svc stopped: the funnel's process with it
