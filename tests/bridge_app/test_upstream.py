"""Upstream helpers: Retry-After handling and environment proxies."""

from __future__ import annotations

import pytest

from bridge_app import upstream


@pytest.mark.parametrize(
    ("headers", "attempt", "delay"),
    [
        ({"retry-after": "1"}, 0, 1.0),
        ({"retry-after-ms": "250"}, 0, 0.25),
        ({"retry-after": "3600"}, 0, upstream.MAX_RETRY_WAIT),  # bounded
        ({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, 1, 1.0),  # unparsed: backoff
        ({}, 2, 2.0),
    ],
)
def test_retry_delay_honours_retry_after_within_bounds(
    headers: dict, attempt: int, delay: float
) -> None:
    assert upstream.retry_delay(headers, attempt) == delay


def test_environment_proxies_apply_except_for_no_proxy_hosts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    upstream._proxy_for_origin.cache_clear()
    try:
        assert (
            upstream.proxy_for("https://api.anthropic.com/v1/messages")
            == "http://proxy.internal:3128"
        )
        assert upstream.proxy_for("http://127.0.0.1:9999/v1/chat/completions") is None
    finally:
        upstream._proxy_for_origin.cache_clear()
