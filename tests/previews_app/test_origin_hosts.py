"""Which Host headers are preview origins: every `*.localhost` name, and nothing else."""

from __future__ import annotations

import pytest

from previews_app.origin import origin_slug


@pytest.mark.parametrize(
    ("host", "slug"),
    [
        ("site-abc.localhost:8000", "site-abc"),
        ("SITE-ABC.LOCALHOST:8000", "site-abc"),
        ("site-abc.localhost.:8000", "site-abc"),
        ("site-abc.localhost", "site-abc"),
        ("a.b.localhost:8000", ""),
        ("-bad.localhost:8000", ""),
        ("localhost:8000", None),
        ("127.0.0.1:8000", None),
        ("[::1]:8000", None),
        ("evil.example", None),
        ("site-abc.localhost.evil.example", None),
        ("", None),
    ],
)
def test_preview_origin_hosts(host: str, slug: str | None) -> None:
    assert origin_slug(host) == slug


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("/app?x=1", "/app?x=1"),
        ("//evil.example/", "/"),
        ("/\\evil.example/", "/"),
        ("https://evil.example/", "/"),
        ("/a\r\nSet-Cookie: x=1", "/"),
        ("/日本?q=é", "/%E6%97%A5%E6%9C%AC?q=%C3%A9"),
    ],
)
def test_only_a_plain_path_follows_a_grant(given: str, kept: str) -> None:
    from previews_app.origin import _safe_next

    assert _safe_next([given]) == kept
