"""Files a person sends the Slack bot (contract §14), downloaded with the bot token — which
therefore goes only where Slack keeps files (security review, issue 31, finding 6).

A message event names each file's `url_private`; for a file Slack hosts that is
`https://files.slack.com/files-pri/…`, but a remote file (`files.remote.add`, e.g. a link to a
drive) carries its own host's URL there, so an event can name any host. The token is sent to
exactly two origins (scheme, host and port compared after parsing, never a prefix or suffix
test): `https://files.slack.com`, and the origin of the channel's `api_base` (a self-hosted proxy
or the test double, which serves files the way Slack does). Other *.slack.com hosts do not count:
no Slack host but files.slack.com serves `url_private`, and workspace hosts (`acme.slack.com`)
are names anyone can register, so allowing them would widen where the token travels with no file
needing it. Redirects are followed only within the same origin, a few times at most.
"""

from __future__ import annotations

import httpx

from channels_app.platform import FileNotReceived

FILE_LIMIT = 20 * 1024 * 1024
SLACK_FILES = ("https", "files.slack.com", 443)
MOST_REDIRECTS = 3
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, the port filled in; None for anything else."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return None
    if parsed.scheme not in _DEFAULT_PORTS or not parsed.host:
        return None
    return parsed.scheme, parsed.host.lower(), parsed.port or _DEFAULT_PORTS[parsed.scheme]


def token_may_go_to(url: str, api_base: str) -> bool:
    """Whether the bot token may be sent with a request for `url`."""
    where = origin(url)
    return where is not None and where in (SLACK_FILES, origin(api_base))


async def download(url: str, name: str, token: str, api_base: str) -> bytes:
    """The file at `url` (checked with token_may_go_to beforehand), at most FILE_LIMIT bytes.
    Raises FileNotReceived, naming the file and what went wrong (never the token)."""
    if not token_may_go_to(url, api_base):  # the caller checked; a second look costs nothing
        raise FileNotReceived(f"{name} is not on Slack's file host; svc did not fetch it")
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with httpx.AsyncClient(timeout=30, follow_redirects=False) as http:
            for _ in range(MOST_REDIRECTS + 1):
                async with http.stream("GET", url, headers=headers) as answer:
                    if not answer.is_redirect:
                        return await _body(answer, name)
                    url = _next_hop(url, str(answer.url.join(answer.headers["location"])), name)
    except httpx.HTTPError as exc:
        raise FileNotReceived(
            f"{name} could not be downloaded from Slack ({type(exc).__name__}); send it again"
        ) from exc
    raise FileNotReceived(f"{name} could not be downloaded: too many redirects")


def _next_hop(current: str, target: str, name: str) -> str:
    """A redirect is followed only within the origin the token was already sent to."""
    if origin(target) != origin(current):
        raise FileNotReceived(
            f"{name} could not be downloaded: Slack redirected svc to another host, and svc "
            "does not send the bot token there"
        )
    return target


async def _body(answer: httpx.Response, name: str) -> bytes:
    if answer.status_code != 200:
        raise FileNotReceived(
            f"{name} could not be downloaded from Slack (HTTP {answer.status_code}); send it again"
        )
    if answer.headers.get("content-type", "").startswith("text/html") and not name.endswith(
        (".html", ".htm")
    ):
        # Slack's answer to a token it will not take is its sign-in page, with a 200.
        raise FileNotReceived(
            f"{name} could not be downloaded: Slack refused the bot token (the app needs the "
            "files:read scope)"
        )
    body = bytearray()
    async for chunk in answer.aiter_bytes():
        body += chunk
        if len(body) > FILE_LIMIT:
            raise FileNotReceived(f"{name} is larger than svc takes from a chat (20 MB)")
    return bytes(body)
