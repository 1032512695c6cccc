"""What the proxy sends upstream and hands back: credentials out, redirects rewritten."""

from __future__ import annotations

from previews_app.proxy import Target, response_headers, rewrite_location, upstream_headers

ORIGIN = Target(
    port=5173, path=b"/", query=b"", public_base="http://app-x.localhost:8000", on_svc_origin=False
)
SHARE = Target(
    port=5173,
    path=b"/",
    query=b"",
    public_base="/preview/s/abc",
    on_svc_origin=True,
    sandboxed=False,
)
BEARER = Target(port=5173, path=b"/", query=b"", public_base="/preview/u/abc", on_svc_origin=True)

BROWSER = [
    (b"host", b"app-x.localhost:8000"),
    (b"authorization", b"Bearer owner-secret"),
    (
        b"cookie",
        b"svc_preview=signed; theme=dark; svc_token=owner-secret; svc_session=s; "
        b"svc_csrftoken=c; sessionid=app-session; csrftoken=app-csrf",
    ),
    (b"origin", b"http://app-x.localhost:8000"),
    (b"referer", b"http://app-x.localhost:8000/page"),
    (b"x-forwarded-for", b"1.2.3.4"),
    (b"connection", b"keep-alive"),
    (b"accept", b"text/html"),
]


def test_the_preview_origin_forwards_the_apps_cookies_only() -> None:
    sent = dict(upstream_headers(BROWSER, ORIGIN))
    # A previewed Django app keeps its own session and CSRF cookies; svc's never pass.
    assert sent[b"cookie"] == b"theme=dark; sessionid=app-session; csrftoken=app-csrf"
    assert b"authorization" not in sent and b"x-forwarded-for" not in sent
    assert b"connection" not in sent
    assert sent[b"host"] == b"localhost:5173"
    assert sent[b"origin"] == b"http://localhost:5173"
    assert sent[b"referer"] == b"http://localhost:5173/page"
    assert sent[b"accept"] == b"text/html"


def test_on_svcs_origin_no_cookie_goes_upstream_at_all() -> None:
    sent = dict(upstream_headers(BROWSER, SHARE))
    assert b"cookie" not in sent and b"authorization" not in sent


def test_locations() -> None:
    assert (
        rewrite_location("http://localhost:5173/a?b", ORIGIN) == "http://app-x.localhost:8000/a?b"
    )
    assert rewrite_location("http://127.0.0.1:5173", ORIGIN) == "http://app-x.localhost:8000/"
    assert rewrite_location("http://127.0.0.1:51730/x", ORIGIN) == "http://127.0.0.1:51730/x"
    assert rewrite_location("https://elsewhere.example/", ORIGIN) == "https://elsewhere.example/"
    assert rewrite_location("/login", SHARE) == "/preview/s/abc/login"
    assert rewrite_location("//elsewhere.example/", SHARE) == "//elsewhere.example/"


def test_responses_on_svcs_origin_cannot_touch_its_cookies() -> None:
    upstream = [
        (b"Set-Cookie", b"svc_token=evil; Path=/"),
        (b"Clear-Site-Data", b'"cookies"'),
        (b"Transfer-Encoding", b"chunked"),
        (b"Content-Type", b"text/html"),
    ]
    shared = dict(response_headers(upstream, SHARE))
    assert b"set-cookie" not in shared and b"clear-site-data" not in shared
    assert b"transfer-encoding" not in shared
    # A share renders unsandboxed (it must run module scripts and use storage) and keeps its
    # Referer same-origin, which is how its root-relative reads find their way back.
    assert b"content-security-policy" not in shared
    assert shared[b"referrer-policy"] == b"same-origin"
    # A bearer client's in-place response stays sandboxed: it holds no referer-routed assets.
    bearer = dict(response_headers(upstream, BEARER))
    assert bearer[b"content-security-policy"].startswith(b"sandbox")
    assert bearer[b"referrer-policy"] == b"no-referrer"
    own = dict(response_headers(upstream, ORIGIN))
    assert own[b"set-cookie"] == b"svc_token=evil; Path=/"  # host-only on the preview origin
    assert b"content-security-policy" not in own
