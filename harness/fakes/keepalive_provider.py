"""A bare OpenAI Chat provider that keeps its connections alive and closes them the way real
servers do, for the bridge's connection-pool tests.

It counts the bytes of each request body (never parses them: a 64 MiB body costs it no time) and
answers a fixed chat completion. Two ways to close a kept-alive connection:

    drop_reused=n    the next n requests that arrive on a connection already used once are met
                     with a reset after their headers and the first MiB: a server whose idle
                     timer fired just as the client took the connection from its pool
    drop_any=n       the same for the next n requests on any connection, fresh ones included: a
                     provider that refuses the request itself
    idle_close_s=t   a connection idle for t seconds after an answer is closed (uvicorn and Node
                     close idle connections after 5 s), so a client that takes it from the pool
                     after the FIN arrived but before its event loop saw it writes into a closed
                     connection

Unless drop_any says otherwise, a connection's first request is answered.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import struct
import threading
from dataclasses import dataclass

REFUSED_AFTER = 1024 * 1024  # bytes of a request read before a dropped connection is reset


@dataclass
class Received:
    connection: int
    path: str
    declared: int  # its Content-Length
    got: int  # body bytes read before the answer or the reset
    answered: bool


class KeepAliveProvider:
    def __init__(self, *, drop_reused: int = 0, idle_close_s: float | None = None) -> None:
        self.drop_reused = drop_reused
        self.drop_any = 0
        self.idle_close_s = idle_close_s
        self.received: list[Received] = []
        self._ids = itertools.count(1)
        self._sock = socket.create_server(("127.0.0.1", 0))  # bound before anyone learns the port
        self.port = self._sock.getsockname()[1]
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def connections(self) -> int:
        return len({r.connection for r in self.received})

    def profile(self, alias: str) -> dict:
        """A bridge profile (settings.json) serving `alias` from this provider."""
        return {
            "provider": "openai-chat",
            "base_url": f"{self.url}/v1",
            "api_key": "profile-key",
            "models": ["fake-model"],
            "model_aliases": {alias: "fake-model"},
        }

    def start(self) -> KeepAliveProvider:
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        if not ready.wait(10):
            raise RuntimeError("the keep-alive provider did not start")
        return self

    def stop(self) -> None:
        if self.loop is not None and self._server is not None:
            self.loop.call_soon_threadsafe(self._server.close)
            self.loop.call_soon_threadsafe(self.loop.stop)

    def _serve(self, ready: threading.Event) -> None:
        self.loop = asyncio.new_event_loop()
        self._server = self.loop.run_until_complete(
            asyncio.start_server(self._connection, sock=self._sock)
        )
        ready.set()
        self.loop.run_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = next(self._ids)
        served = 0
        try:
            while True:
                wait = self.idle_close_s if served else None
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), wait)
                except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    return  # idle for too long, or the client closed it
                path, declared = _request_line_path(head), _content_length(head)
                if self.drop_any > 0 or (served and self.drop_reused > 0):
                    if self.drop_any > 0:
                        self.drop_any -= 1
                    else:
                        self.drop_reused -= 1
                    got = len(await reader.read(min(declared, REFUSED_AFTER)))
                    self.received.append(Received(conn, path, declared, got, answered=False))
                    _reset(writer)
                    return
                got = 0
                while got < declared:
                    chunk = await reader.read(min(declared - got, 1 << 20))
                    if not chunk:
                        break
                    got += len(chunk)
                self.received.append(Received(conn, path, declared, got, answered=True))
                writer.write(_answer(got))
                await writer.drain()
                served += 1
        finally:
            writer.close()


def _request_line_path(head: bytes) -> str:
    return head.split(b"\r\n", 1)[0].split(b" ")[1].decode()


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST (SO_LINGER 0), as a server does that closes with unread input."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _answer(got: int) -> bytes:
    body = json.dumps(
        {
            "id": "chatcmpl-keepalive",
            "object": "chat.completion",
            "created": 0,
            "model": "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"received {got} bytes"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4},
        }
    ).encode()
    head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body
