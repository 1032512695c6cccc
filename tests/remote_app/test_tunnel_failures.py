"""A tunnel that cannot work says why in words and backs off (issue 43, friction 2): localtunnel
offline flipped between `error` and `starting` with "printed no URL within 30 s", never "cannot
reach localtunnel.me".

The tools are the stand-ins of tests/fixtures/tunnel-standins, printing the real tools' failure
lines (docs/tunnel-providers.md says where each was seen): localtunnel's `debug` line while its
server cannot be reached (printed only when DEBUG names it, as the real `debug` module does: svc
must set it), npm's lines when npx cannot download localtunnel, cloudflared's quick-tunnel error
from its issue #555, tailscale's message when tailscaled is not running."""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import sys
from pathlib import Path

import pytest

from harness.daemon import free_port
from harness.runtime import running, settings_file
from remote_app.tunnels import registry
from remote_app.tunnels.base import TunnelError
from remote_app.tunnels.process import ProcessTunnel
from svcproject.assembly import build as build_parts
from tests.remote_app.test_tunnel_providers import facts_of, wait_gone

STANDINS = Path(__file__).resolve().parents[1] / "fixtures" / "tunnel-standins"
LOCALTUNNEL_OFFLINE = "cannot reach localtunnel.me (localtunnel's server): name not resolved"


@pytest.fixture
def standins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The stand-ins first on PATH (with this interpreter as their python3), and no DEBUG of
    the test's own: svc must ask localtunnel for its reasons itself."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "python3").symlink_to(os.path.realpath(sys.executable))
    monkeypatch.setenv("PATH", os.pathsep.join([str(STANDINS), str(folder), os.environ["PATH"]]))
    monkeypatch.setenv("STANDIN_PORT_FILE", str(tmp_path / "standin.json"))
    monkeypatch.setenv("STANDIN_RETRY_S", "0.05")
    monkeypatch.delenv("DEBUG", raising=False)
    return tmp_path / "standin.json"


def build(provider: str, **options: object) -> ProcessTunnel:
    tunnel = registry.build("t", {"provider": provider, **options})
    assert isinstance(tunnel, ProcessTunnel)
    return tunnel


async def failure(tunnel: ProcessTunnel, limit: float = 20) -> str:
    with pytest.raises(TunnelError) as failed:
        async with asyncio.timeout(limit):
            await tunnel.run(1, lambda url: None)
    return str(failed.value)


async def test_localtunnel_offline_says_it_cannot_reach_its_server_without_waiting_30_s(
    standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "offline")
    said = await failure(build("localtunnel"))  # url_timeout_s is the default 30 s
    assert said.startswith(LOCALTUNNEL_OFFLINE + " (localtunnel kept trying; it said: "), said
    assert "tunnel server offline: getaddrinfo ENOTFOUND localtunnel.me, retry 1s" in said
    assert not said.split("it said: ")[1].startswith("20")  # its timestamp left out
    assert "no URL within" not in said  # it gave up on the repeats, not on the timeout
    await wait_gone((await facts_of(standins))["pid"])  # and ended localtunnel's process


async def test_localtunnel_with_its_own_server_names_that_server(
    standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "offline")
    said = await failure(build("localtunnel", host="https://lt.example.invalid"))
    assert said.startswith("cannot reach lt.example.invalid: name not resolved ("), said


async def test_npx_without_its_registry_says_it_cannot_reach_npm(
    standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last line npm prints is "A complete log of this run can be found in …": quoted
    alone, as before, it said nothing of the cause."""
    monkeypatch.setenv("STANDIN_MODE", "registry-offline")
    said = await failure(build("localtunnel"))
    assert said.startswith(
        "cannot reach registry.npmjs.org (npm's registry, where npx gets localtunnel the first "
        "time): name not resolved (localtunnel exited with code 1; it said: npm error network "
        "request to https://registry.npmjs.org/localtunnel failed"
    ), said


async def test_cloudflared_offline_says_it_cannot_reach_the_quick_tunnel_service(
    standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "exit")  # its issue #555 line, then exit
    said = await failure(build("cloudflared"))
    assert said.startswith(
        "cannot reach api.trycloudflare.com (Cloudflare's quick-tunnel service): name not "
        "resolved (cloudflared exited with code 3; it said: failed to request quick Tunnel"
    ), said


async def test_tailscale_without_its_daemon_says_to_start_it_and_log_in(
    standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "exit")
    said = await failure(build("tailscale"))
    assert said.startswith("tailscaled is not running on this machine: start it"), said
    assert "tailscale up` (a Tailscale account is needed)" in said


async def test_tailscale_without_funnel_gives_the_link_that_enables_it(
    standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "silent")
    said = await failure(build("tailscale", url_timeout_s=0.5))
    assert said.startswith(
        "Funnel is not enabled for this tailnet (or this machine must log in): open "
        "https://login.tailscale.com/f/funnel?node=nStandin1CNTRL (tailscale funnel printed no "
        "URL within 0.5 s; it said: "
    ), said


@pytest.mark.django_db(transaction=True)
async def test_as_a_service_it_stays_error_with_its_reason_and_waits_longer_each_time(
    standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the Remote view shows: the reason in words, `error` all along once it failed (no
    flip to `starting` at every try), and a wait that doubles (0.2, 0.4, 0.8 s here; 1 s
    doubling to 60 s in a daemon), `retry_in_s` 0 while it tries."""
    monkeypatch.setenv("STANDIN_MODE", "offline")
    parts = build_parts(backoff_first_s=0.2)
    parts.runtime.reach.remote_port = 1
    supervisor = parts.runtime.supervisor
    seen: list[tuple[str, str, float | None]] = []
    waits: dict[int, float] = {}
    with settings_file({"tunnels": {"lt": {"provider": "localtunnel"}}}):
        async with running(parts):
            async with asyncio.timeout(60):
                while len(waits) < 3:
                    state = supervisor.states.get("lt")
                    if state is not None:
                        row = state.to_dict()
                        seen.append((row["status"], row["detail"], row["retry_in_s"]))
                        if state.status == "error" and state.retry_at is not None:
                            waits[state.restarts] = state.retry_in_s or 0
                    await asyncio.sleep(0.01)
    first_error = next(i for i, row in enumerate(seen) if row[0] == "error")
    after = seen[first_error:]
    assert {status for status, _, _ in after} == {"error"}, sorted(set(after))[:5]
    assert all(detail.startswith(LOCALTUNNEL_OFFLINE) for _, detail, _ in after)
    assert 0.0 in {retry for _, _, retry in after}  # trying again, still `error`
    assert [waits[n] for n in sorted(waits)][:3] == [0.2, 0.4, 0.8]


# npm's cache of this machine's user (the tests run with a HOME of their own).
NPM_CACHE = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".npm"


def npx_has_localtunnel() -> bool:
    """localtunnel already in npx's cache: the real one runs with no download."""
    return bool(list(NPM_CACHE.glob("_npx/*/node_modules/localtunnel/package.json")))


async def test_the_real_localtunnel_whose_server_refuses_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real tool under npx, pointed at a port nothing listens on: without svc's DEBUG it
    would print nothing at all for ever (seen with 2.0.2)."""
    # Never a skip: `make test-fixtures` puts it in npx's cache; this test never downloads it.
    assert shutil.which("npx") and npx_has_localtunnel(), "run `make test-fixtures` first"
    monkeypatch.delenv("DEBUG", raising=False)
    monkeypatch.setenv("npm_config_cache", str(NPM_CACHE))
    closed = free_port()
    said = await failure(build("localtunnel", host=f"http://127.0.0.1:{closed}"), limit=60)
    assert said.startswith(f"cannot reach 127.0.0.1:{closed}: connection refused ("), said
    assert f"tunnel server offline: connect ECONNREFUSED 127.0.0.1:{closed}, retry 1s" in said
