"""A host that is not Slack's, for the tests that a Slack bot token never leaves Slack: a small
HTTP server on a loopback port that answers every GET with a file's bytes and records every
request (method, path, Authorization header) — whatever reached it, token or not, is there to
see. A url_private naming it stands for a remote file's URL, or an attacker's.

    with ElsewhereHost() as elsewhere:
        file = slack.add_file("notes.txt", b"...", url_private=elsewhere.url("/notes.txt"))
        ...
        assert elsewhere.requests == []
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ElsewhereHost:
    def __init__(self, body: bytes = b"a file from elsewhere") -> None:
        self.body = body
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def requests(self) -> list[dict[str, Any]]:
        """{method, path, authorization} of every request, in arrival order."""
        with self._lock:
            return list(self._requests)

    def url(self, path: str = "/") -> str:
        assert self._server is not None, "start() it first"
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def start(self) -> ElsewhereHost:
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server calls it by this name
                with host._lock:
                    host._requests.append(
                        {
                            "method": "GET",
                            "path": self.path,
                            "authorization": self.headers.get("Authorization"),
                        }
                    )
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(host.body)))
                self.end_headers()
                self.wfile.write(host.body)

            def log_message(self, *args: Any) -> None:  # quiet test output
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="slack-elsewhere", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> ElsewhereHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
