"""A logged-in browser, for tests that speak HTTP without Chromium.

Chromium resolves every `*.localhost` name to loopback; Python's resolver here does not, so
`LocalhostTransport` sends those requests to 127.0.0.1 while httpx keeps the URL's host (the
Host header and the cookie jar see `svc-….localhost`, exactly as a browser would).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from harness.daemon import Daemon


class LocalhostTransport(httpx.HTTPTransport):
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not request.url.host.endswith(".localhost"):
            return super().handle_request(request)
        # A copy: the client files cookies under the original request's host.
        sent = httpx.Request(
            request.method,
            request.url.copy_with(host="127.0.0.1"),
            headers=request.headers,
            stream=request.stream,
            extensions=request.extensions,
        )
        return super().handle_request(sent)


def dashboard_url(daemon: Daemon) -> str:
    return f"http://{daemon.auth()['browser_host']}:{daemon.port}"


def localhost_client(**kwargs: object) -> httpx.Client:
    return httpx.Client(transport=LocalhostTransport(), **kwargs)  # type: ignore[arg-type]


@contextmanager
def logged_in(daemon: Daemon) -> Iterator[httpx.Client]:
    """Walks the README's login: the printed 127.0.0.1 URL hands over to the dashboard host."""
    with localhost_client(base_url=dashboard_url(daemon), timeout=30) as client:
        _login(daemon, client)
        yield client


def _login(daemon: Daemon, client: httpx.Client) -> None:
    first = client.get(f"{daemon.url}/login", params={"token": daemon.owner_token})
    assert first.status_code == 302, first.text
    handover = first.headers["location"]
    assert handover.startswith(dashboard_url(daemon) + "/login?grant="), handover
    second = client.get(handover)
    assert second.status_code == 302 and second.headers["location"] == "/", second.text
    assert client.cookies.get("svc_session"), "the dashboard host set no session cookie"


def csrf_token(client: httpx.Client) -> str:
    """The session-bound CSRF token the dashboard page carries."""
    page = client.get("/")
    assert page.status_code == 200, page.text
    marker = 'name="csrf-token" content="'
    return page.text.split(marker, 1)[1].split('"', 1)[0]


def lget(url: str, **kwargs: object) -> httpx.Response:
    """httpx.get that also reaches `*.localhost` URLs (owner URLs live on the dashboard host)."""
    with localhost_client() as client:
        return client.get(url, **kwargs)  # type: ignore[arg-type]
