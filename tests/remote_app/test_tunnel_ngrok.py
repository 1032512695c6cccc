"""The ngrok tunnel, in-process. ngrok's service cannot be reached from here, so these tests
stop at what the SDK's own objects show (its error when no session can be made) and at what svc
asks of it (through a stand-in with the same method names as the SDK's classes)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from remote_app.tunnels.base import TunnelError
from remote_app.tunnels.ngrok_tunnel import NgrokTunnel
from tests.remote_app.tunnel_tasks import stop, until_up


class StandInSDK:
    """Stands in for the `ngrok` module: records what svc asks of it. Its classes carry only
    methods the real SDK's classes have (checked below), with the same awaitables."""

    def __init__(self, refuse_endpoint: bool = False) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.refuse_endpoint = refuse_endpoint
        sdk = self

        class Listener:
            def url(self) -> str:
                return "https://svc-standin.ngrok-free.app"

            async def close(self) -> None:
                sdk.calls.append(("listener.close",))

        class HttpListenerBuilder:
            def domain(self, domain: str) -> HttpListenerBuilder:
                sdk.calls.append(("domain", domain))
                return self

            async def listen_and_forward(self, url: str) -> Listener:
                sdk.calls.append(("listen_and_forward", url))
                if sdk.refuse_endpoint:
                    raise ValueError("failed to start listener", "ERR_NGROK_320 domain reserved")
                return Listener()

        class Session:
            def http_endpoint(self) -> HttpListenerBuilder:
                return HttpListenerBuilder()

            async def close(self) -> None:
                sdk.calls.append(("session.close",))

        class SessionBuilder:
            def authtoken(self, authtoken: str) -> SessionBuilder:
                sdk.calls.append(("authtoken", authtoken))
                return self

            async def connect(self) -> Session:
                return Session()

        self.SessionBuilder, self.Session = SessionBuilder, Session
        self.HttpListenerBuilder, self.Listener = HttpListenerBuilder, Listener


def test_the_stand_in_sdk_uses_only_what_the_real_sdk_has() -> None:
    import ngrok

    standin = StandInSDK()
    for name in ("SessionBuilder", "Session", "HttpListenerBuilder", "Listener"):
        used = {m for m in vars(getattr(standin, name)) if not m.startswith("_")}
        assert used <= set(dir(getattr(ngrok, name))), name
    real = ngrok.SessionBuilder().authtoken("x")  # the real builder chains as svc uses it
    assert isinstance(real, ngrok.SessionBuilder)


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("NGROK_AUTHTOKEN", "2svcStandInToken_notReal")
    return "2svcStandInToken_notReal"


async def test_ngrok_forwards_the_remote_port_and_closes_on_cancel(token: str) -> None:
    sdk = StandInSDK()
    tunnel = NgrokTunnel("t", {"provider": "ngrok", "domain": "svc.ngrok.app"}, sdk=sdk)
    urls: list[str] = []
    task = asyncio.ensure_future(tunnel.run(4711, urls.append))
    await until_up(task, urls)
    assert urls == ["https://svc-standin.ngrok-free.app"]
    assert sdk.calls == [
        ("authtoken", token),
        ("domain", "svc.ngrok.app"),
        ("listen_and_forward", "http://127.0.0.1:4711"),
    ]
    await asyncio.sleep(0.1)
    assert not task.done()  # it runs until cancelled
    await stop(task)
    assert sdk.calls[-2:] == [("listener.close",), ("session.close",)]


async def test_ngrok_without_a_domain_takes_the_one_ngrok_gives(token: str) -> None:
    sdk = StandInSDK()
    task = asyncio.ensure_future(NgrokTunnel("t", {}, sdk=sdk).run(4711, lambda url: None))
    async with asyncio.timeout(20):
        while len(sdk.calls) < 2:
            await asyncio.sleep(0.01)
    await stop(task)
    assert [c[0] for c in sdk.calls] == [
        "authtoken",
        "listen_and_forward",
        "listener.close",
        "session.close",
    ]


async def test_ngrok_refusing_the_domain_names_the_option(token: str) -> None:
    tunnel = NgrokTunnel("t", {"domain": "taken.ngrok.app"}, sdk=StandInSDK(refuse_endpoint=True))
    with pytest.raises(TunnelError, match=r"ERR_NGROK_320 .*; check tunnels\.t\.domain"):
        await tunnel.run(4711, lambda url: None)


async def test_ngrok_without_its_authtoken_says_where_to_get_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NGROK_AUTHTOKEN", raising=False)
    monkeypatch.delenv("SVC_TEST_NGROK", raising=False)
    with pytest.raises(TunnelError, match=r"NGROK_AUTHTOKEN is not set .*dashboard\.ngrok\.com"):
        await NgrokTunnel("t", {}, sdk=StandInSDK()).run(4711, lambda url: None)
    with pytest.raises(TunnelError, match="SVC_TEST_NGROK is not set"):
        await NgrokTunnel("t", {"authtoken_env": "SVC_TEST_NGROK"}).run(4711, lambda url: None)


async def test_ngrok_with_the_real_sdk_reports_a_session_it_cannot_make(token: str) -> None:
    """The real SDK, with a made-up token: offline it cannot connect, online ngrok refuses the
    token; either way its ValueError becomes a sentence saying which (issue 43)."""
    async with asyncio.timeout(30):
        with pytest.raises(TunnelError) as failed:
            await NgrokTunnel("t", {}).run(4711, lambda url: None)
    said = str(failed.value)
    offline = said.startswith("cannot reach connect.ngrok-agent.com (ngrok's service): ")
    if offline:  # this machine, its DNS resolving no public name
        assert said.endswith(
            "(ngrok said: failed to connect session: failed to establish tcp connection)"
        )
    else:
        assert said.startswith("ngrok refused the authtoken in NGROK_AUTHTOKEN: "), said


async def test_ngrok_refusing_the_token_says_an_account_is_needed(
    monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    """What ngrok-rust's session says when the service refuses the token (its words in the SDK:
    "authentication failure"), through the stand-in."""
    sdk = StandInSDK()

    async def refuse(builder: object) -> None:
        raise ValueError("failed to connect session", "authentication failure: ERR_NGROK_105")

    monkeypatch.setattr(sdk.SessionBuilder, "connect", refuse)
    with pytest.raises(TunnelError) as failed:
        await NgrokTunnel("t", {}, sdk=sdk).run(4711, lambda url: None)
    assert str(failed.value).startswith(
        "ngrok refused the authtoken in NGROK_AUTHTOKEN: an ngrok account's authtoken is needed "
        "(from https://dashboard.ngrok.com/get-started/your-authtoken)"
    )


async def test_ngrok_without_the_sdk_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    monkeypatch.setitem(sys.modules, "ngrok", None)  # `import ngrok` fails as if not installed
    with pytest.raises(TunnelError, match="pip install ngrok"):
        await NgrokTunnel("t", {}).run(4711, lambda url: None)
