"""A chat platform that cannot be reached, said in words (issue 43): "cannot reach
api.telegram.org (the Telegram Bot API): name not resolved", not the library's
`httpx.ConnectError: [Errno -2] Name or service not known`. The words are core/network_words',
shared with the tunnels; the host is the one the channel's `api_base` names."""

from __future__ import annotations

from urllib.parse import urlsplit

from core import network_words

WHAT = {"telegram": "the Telegram Bot API", "slack": "Slack's API"}
DEFAULT_HOST = {"telegram": "api.telegram.org", "slack": "slack.com"}


def unreachable(
    kind: str, api_base: str, exc: BaseException, setting: str = "", *secrets: str
) -> str:
    """The sentence for `exc` on the way to `api_base`; `setting` names where api_base was set
    when it is not the platform's own (a typo there is the likeliest cause). The library's own
    text is the last resort, with any credential in it taken out."""
    host = urlsplit(api_base).netloc or api_base or DEFAULT_HOST.get(kind, "")
    reason = network_words.reason_of(exc) or _scrubbed(exc, secrets)
    what = WHAT.get(kind, "")
    if setting and urlsplit(api_base).hostname != DEFAULT_HOST.get(kind):
        what = f"{what}, {setting}" if what else setting
    return network_words.cannot_reach(host, reason, what)


def _scrubbed(exc: BaseException, secrets: tuple[str, ...]) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    for secret in secrets:
        if secret:
            text = text.replace(secret, "<token>")
    return text
