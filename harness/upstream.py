"""A dev-server stand-in for preview tests: static files plus a few instrumented routes.

/echo answers what arrived (method, path, headers, body size); /stream sends one chunk, then waits
until the test releases it, which proves the proxy streams instead of buffering; /redirect-away
points at another host; /redirect-self at this server's own absolute URL; /hold streams one chunk
and records when the proxy closes the connection.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

STATIC = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "previews" / "static"


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class Upstream:
    def __init__(self, root: Path = STATIC, host: str = "127.0.0.1") -> None:
        self.release = threading.Event()
        self.hold_closed = threading.Event()
        self.requests: list[dict] = []
        outer = self

        class Handler(SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def __init__(self, *args, **kwargs) -> None:
                super().__init__(*args, directory=str(root), **kwargs)

            def log_message(self, *args) -> None:
                pass

            def _record(self) -> dict:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                seen = {
                    "method": self.command,
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body_size": len(body),
                    "body_head": body[:64].decode("latin-1"),
                }
                outer.requests.append(seen)
                return seen

            def _json(self, status: int, data: dict, extra: dict | None = None) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _route(self) -> bool:
                if self.path.startswith("/echo"):
                    self._json(200, self._record(), {"Set-Cookie": "app_cookie=1; Path=/"})
                elif self.path == "/redirect-away":
                    self._record()
                    self._json(302, {}, {"Location": "http://example.invalid/elsewhere"})
                elif self.path == "/redirect-self":
                    self._record()
                    port = self.server.server_address[1]
                    self._json(302, {}, {"Location": f"http://localhost:{port}/echo?from=redirect"})
                elif self.path == "/stream":
                    self._record()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for part in (b"first\n", b"second\n"):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                        self.wfile.flush()
                        outer.release.wait(10)
                    self.wfile.write(b"0\r\n\r\n")
                elif self.path == "/hold":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.write(b"6\r\nhello\n\r\n")
                    self.wfile.flush()
                    with contextlib.suppress(OSError):  # blocks until the proxy hangs up
                        self.connection.recv(1)
                    outer.hold_closed.set()
                    self.close_connection = True
                else:
                    return False
                return True

            def do_GET(self) -> None:
                if not self._route():
                    super().do_GET()

            def do_HEAD(self) -> None:
                if not self._route():
                    super().do_HEAD()

            def do_POST(self) -> None:
                self._json(200, self._record())

            do_PUT = do_DELETE = do_PATCH = do_POST

        server_class = _IPv6Server if ":" in host else ThreadingHTTPServer
        self.server = server_class((host, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Upstream:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
