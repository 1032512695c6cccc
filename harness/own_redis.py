"""A redis-server of a test's own, which the test may stop and start again on the same port
(the machine's shared Redis is never touched: other tests use it)."""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import time

from harness.daemon import free_port


class OwnRedis:
    def __init__(self, password: str = "") -> None:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.port = free_port()
        self.password = password  # `requirepass`: a client must AUTH with it
        self.server: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def env(self) -> dict[str, str]:
        return {"SVC_REDIS_URL": self.url, "SVC_REDIS_PREFIX": f"own-{secrets.token_hex(4)}"}

    def start(self) -> OwnRedis:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no"]
        if self.password:
            command += ["--requirepass", self.password]
        self.server = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.02)

    def kill(self) -> None:
        if self.server is not None:
            self.server.kill()
            self.server.wait()
            self.server = None
