"""The static handler gzips a text file once per process and again only when the file changes
(a new checkout): what a browser gets is always the file as it is now."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from django.test import RequestFactory

from core.static_files import StaticFiles

# Django's response close sends request_finished, which closes stale database connections: a
# connection another test of this process opened must be reachable then (in any test order).
pytestmark = pytest.mark.django_db


@pytest.fixture
def static_dir(tmp_path: Path, settings) -> Path:  # type: ignore[no-untyped-def]
    settings.STATICFILES_DIRS = [tmp_path]
    return tmp_path


def fetch(handler: StaticFiles, path: str, encoding: str = "gzip") -> tuple[int, dict, bytes]:
    request = RequestFactory().get(path, HTTP_ACCEPT_ENCODING=encoding)
    response = handler.serve(request)
    body = b"".join(response) if response.streaming else response.content
    response.close()
    return response.status_code, dict(response.items()), body


def test_a_changed_file_is_compressed_again(static_dir: Path) -> None:
    handler = StaticFiles(lambda *args: None)
    script = static_dir / "app.js"
    script.write_text("const first = 1;\n" * 50)
    status, headers, body = fetch(handler, "/static/app.js")
    assert (status, headers["Content-Encoding"]) == (200, "gzip")
    assert gzip.decompress(body) == script.read_bytes()
    assert headers["Content-Length"] == str(len(body))
    assert fetch(handler, "/static/app.js")[2] == body  # the same bytes, from the cache

    script.write_text("const second = 2;\n" * 50)
    stat = script.stat()
    os.utime(script, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert gzip.decompress(fetch(handler, "/static/app.js")[2]) == script.read_bytes()


def test_without_gzip_and_for_binary_files_the_file_goes_as_it_is(static_dir: Path) -> None:
    handler = StaticFiles(lambda *args: None)
    (static_dir / "app.js").write_text("x = 1;\n" * 50)
    (static_dir / "icon.png").write_bytes(b"\x89PNG" + bytes(range(256)) * 2000)
    status, headers, body = fetch(handler, "/static/app.js", encoding="identity")
    assert (status, "Content-Encoding" in headers) == (200, False)
    assert body == (static_dir / "app.js").read_bytes()
    status, headers, body = fetch(handler, "/static/icon.png")
    assert (status, "Content-Encoding" in headers) == (200, False)
    assert body == (static_dir / "icon.png").read_bytes()


def test_a_path_out_of_the_static_folder_is_a_plain_404(static_dir: Path) -> None:
    handler = StaticFiles(lambda *args: None)
    assert fetch(handler, "/static/../settings.py")[:1] == (404,)
    assert fetch(handler, "/static/missing.js")[0] == 404
