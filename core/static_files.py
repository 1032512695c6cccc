"""/static/: Django's static files handler, with text gzipped once per process."""

from __future__ import annotations

import os
from typing import Any

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import SuspiciousFileOperation
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseNotFound
from django.middleware.gzip import re_accepts_gzip
from django.utils.cache import patch_vary_headers
from django.utils.text import compress_string

COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")


class StaticFiles(ASGIStaticFilesHandler):
    """A missing static file is a plain 404 — `/static/../x` included, for which Django's finder
    raises SuspiciousFileOperation. Plain, because Django's 404 page wants a session (for its
    CSRF token) and the static handler runs outside the middleware that makes one."""

    def __init__(self, application: Any) -> None:
        super().__init__(application)
        # Each text file gzipped once per process, not once per request: a dashboard load asks
        # for ~35 of them, and gzipping ~0.9 MB each time cost the daemon ~30 ms of CPU per load.
        # Keyed by path; a changed size or mtime (a new checkout) compresses it again.
        self.gzipped: dict[str, tuple[tuple[int, int], bytes]] = {}

    def serve(self, request: HttpRequest) -> HttpResponse:
        try:
            response = super().serve(request)
        except (SuspiciousFileOperation, Http404):
            return HttpResponseNotFound("no such static file", content_type="text/plain")
        if not isinstance(response, FileResponse):
            return response  # a 304: nothing to send
        # Text goes gzipped to a browser that takes it: the dashboard's libraries are ~0.9 MB
        # as files, and a phone loads them through a tunnel.
        accepts = re_accepts_gzip.search(request.META.get("HTTP_ACCEPT_ENCODING", ""))
        if accepts and response.get("Content-Type", "").startswith(COMPRESSIBLE):
            return self.gzipped_copy(response)
        response.block_size = 256 * 1024  # one body message per 256 KiB, not per 4 KiB
        return response

    def gzipped_copy(self, response: FileResponse) -> HttpResponse:
        path = response.file_to_stream.name
        stat = os.fstat(response.file_to_stream.fileno())
        version = (stat.st_size, stat.st_mtime_ns)
        cached = self.gzipped.get(path)
        if cached is None or cached[0] != version:
            cached = self.gzipped[path] = (version, compress_string(response.file_to_stream.read()))
        response.close()
        body = cached[1]
        copy = HttpResponse(body, content_type=response["Content-Type"])
        copy["Last-Modified"] = response["Last-Modified"]
        copy["Content-Encoding"] = "gzip"
        copy["Content-Length"] = str(len(body))
        patch_vary_headers(copy, ("Accept-Encoding",))
        return copy
