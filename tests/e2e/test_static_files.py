"""The dashboard's libraries go gzipped to a browser that accepts it (a phone loads ~0.9 MB of
them through a tunnel), unchanged to one that does not, and a revalidation still costs a 304."""

from __future__ import annotations

import gzip
import http.client

from harness.daemon import ROOT, Daemon

XTERM = ROOT / "static" / "vendor" / "xterm.js"


def get(daemon: Daemon, path: str, **headers: str) -> tuple[http.client.HTTPResponse, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=30)
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


def test_text_is_gzipped_for_a_browser_that_takes_it(daemon: Daemon) -> None:
    response, body = get(daemon, "/static/vendor/xterm.js", **{"Accept-Encoding": "gzip, br"})
    assert response.status == 200
    assert response.getheader("Content-Encoding") == "gzip"
    assert "Accept-Encoding" in (response.getheader("Vary") or "")
    assert gzip.decompress(body) == XTERM.read_bytes()
    assert len(body) < 0.4 * XTERM.stat().st_size


def test_a_client_without_gzip_gets_the_file_as_it_is(daemon: Daemon) -> None:
    response, body = get(daemon, "/static/vendor/xterm.js")
    assert response.getheader("Content-Encoding") is None
    assert body == XTERM.read_bytes()


def test_a_revalidation_is_still_a_304(daemon: Daemon) -> None:
    first, _ = get(daemon, "/static/svc/app.js", **{"Accept-Encoding": "gzip"})
    modified = first.getheader("Last-Modified")
    assert modified
    again, body = get(
        daemon,
        "/static/svc/app.js",
        **{"Accept-Encoding": "gzip"},
        **{"If-Modified-Since": modified},
    )
    assert (again.status, body) == (304, b"")


def test_an_svg_is_text_and_gzipped_too(daemon: Daemon) -> None:
    response, body = get(daemon, "/static/svc/favicon.svg", **{"Accept-Encoding": "gzip"})
    assert response.getheader("Content-Encoding") == "gzip"
    assert gzip.decompress(body) == (ROOT / "static" / "svc" / "favicon.svg").read_bytes()
