"""A fake model provider: a real aiohttp server on a loopback port speaking all four provider
dialects (OpenAI Chat, OpenAI Responses, Anthropic Messages, Gemini), streaming and not.

It is written from the wire formats, independently of bridge_app, and records every request.
What it answers is steered by markers in the last user text, so parallel tests never race:

    [tools]          call every declared tool (at most two: a parallel call)
    [call:<suffix>]  call the declared tool whose name ends with <suffix> (no arguments); the
                     answer after its result echoes the result (results=[...])
    [429:<token>]    answer 429 with Retry-After: 1 the first time <token> is seen
    [status:<code>]  answer that error status in the provider's dialect
    [hang]           never answer (for timeouts)
    [slow]           stream one chunk every 50 ms for 10 s (for disconnects)
    [midfail]        stream one chunk, then the dialect's error event
    [midabort]       stream one chunk, then drop the connection
    [jsonstream]     answer a stream request with one JSON body
    [emptystream]    answer a stream request with an SSE body that carries no event
    [garbage]        answer 200 with a JSON object of the wrong shape
    [max]            stop because of max tokens

Otherwise it answers text that summarises what it received (system, turns, images, tool
results), so end-to-end tests can check that translation kept them.
Run standalone (for bench/): `python -m harness.fakes.fake_provider --port 9999`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from harness.fakes import bridge_fake_formats as fmt

COUNTING = ("/count_tokens", ":countTokens", "/input_tokens")


@dataclass
class Recorded:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    started_at: float = field(default_factory=time.monotonic)
    closed_at: float | None = None  # when a streaming client went away
    finished: bool = False


def _dialect(request: web.Request) -> str:
    path = request.path
    if ":" in path.rsplit("/", 1)[-1] or "/v1beta/" in path or "/v1alpha/" in path:
        return "gemini"
    if (
        path.endswith("/messages")
        or path.endswith("/count_tokens")
        or "anthropic-version" in request.headers
    ):
        return "anthropic"
    if path.endswith("/responses"):
        return "openai-responses"
    return "openai-chat"


class FakeProvider:
    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.requests: list[Recorded] = []
        self.seen_tokens: set[str] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def base_url(self, dialect: str) -> str:
        """What the official SDK of `dialect` takes as base_url for this server."""
        return f"{self.url}/v1" if dialect.startswith("openai") else self.url

    # --- lifecycle -------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=128 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def start(self) -> FakeProvider:
        if not self.port:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.port = sock.getsockname()[1]
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def _serve(self, ready: threading.Event) -> None:
        self.loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(self.app(), access_log=None)
        self.loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        self.loop.run_until_complete(site.start())
        ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        if self.loop and self._runner:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)

    def last(self, marker: str = "") -> Recorded:
        for rec in reversed(self.requests):
            if marker in json.dumps(rec.body):
                return rec
        raise AssertionError(f"no request containing {marker!r}")

    def wait_closed(self, marker: str, timeout: float = 5.0) -> Recorded:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rec = self.last(marker)
            if rec.closed_at is not None or rec.finished:
                return rec
            time.sleep(0.01)
        return self.last(marker)

    # --- handling --------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        rec = Recorded(
            request.method,
            request.path,
            request.query_string,
            {k.lower(): v for k, v in request.headers.items()},
            body,
        )
        self.requests.append(rec)
        dialect = _dialect(request)
        if request.path.endswith(".png"):  # an image on the web, for image-by-URL tests
            return web.Response(body=fmt.PNG, content_type="image/png")
        if request.method == "GET" or request.path.endswith(COUNTING):
            return web.json_response(fmt.meta(dialect, request.path))
        seen = fmt.extract(dialect, body if isinstance(body, dict) else {})
        status = self._forced_status(seen.last_text)
        if status:
            return web.json_response(
                fmt.error(dialect, status, f"fake {status}"),
                status=status,
                headers={"Retry-After": "1"} if status == 429 else {},
            )
        if "[hang]" in seen.last_text:
            return await self._hang(request, rec)
        model = (
            request.match_info["tail"].split("models/")[-1].split(":")[0]
            if dialect == "gemini"
            else body.get("model", "")
        )
        plan = fmt.plan(seen, model)
        stream = (
            "streamGenerateContent" in request.path
            if dialect == "gemini"
            else bool(body.get("stream"))
        )
        if "[garbage]" in seen.last_text:  # a 200 no codec can read
            return web.json_response({"choices": "?", "content": 7, "candidates": 3, "output": 5})
        if not stream or "[jsonstream]" in seen.last_text:  # some servers ignore `stream`
            rec.finished = True
            return web.json_response(
                fmt.render(dialect, plan), headers={"x-request-id": "req_fake"}
            )
        return await self._stream(request, rec, dialect, plan, seen.last_text)

    async def _hang(self, request: web.Request, rec: Recorded) -> web.StreamResponse:
        """Say nothing until the caller gives up (then record when it did)."""
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            if request.transport is None or request.transport.is_closing():
                rec.closed_at = time.monotonic()
                break
            await asyncio.sleep(0.02)
        return web.Response(status=504)

    def _forced_status(self, text: str) -> int:
        m = re.search(r"\[429:([\w-]+)\]", text)
        if m and m.group(1) not in self.seen_tokens:
            self.seen_tokens.add(m.group(1))
            return 429
        if m := re.search(r"\[status:(\d{3})\]", text):
            return int(m.group(1))
        return 0

    async def _stream(
        self, request: web.Request, rec: Recorded, dialect: str, plan: fmt.Plan, text: str
    ) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)
        frames = fmt.stream(dialect, plan, midfail="[midfail]" in text)
        if "[emptystream]" in text:
            frames = [b": keep-alive\n\n"]
        slow = "[slow]" in text
        try:
            if slow:
                await self._slow(resp, dialect, plan)
            if "[midabort]" in text:  # the provider dies: the connection drops mid-body
                await resp.write(frames[0])
                request.transport.close()
                rec.closed_at = time.monotonic()
                return resp
            for frame in frames:
                await resp.write(frame)
            rec.finished = True
            await resp.write_eof()
        except ConnectionError:
            rec.closed_at = time.monotonic()  # the client (svc) went away: what tests wait for
        except asyncio.CancelledError:
            rec.closed_at = time.monotonic()
            raise
        return resp

    async def _slow(self, resp: web.StreamResponse, dialect: str, plan: fmt.Plan) -> None:
        head, delta = fmt.slow_frames(dialect, plan)
        await resp.write(head)
        for _ in range(200):
            await asyncio.sleep(0.05)
            await resp.write(delta)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    web.run_app(
        FakeProvider(args.port).app(), host="127.0.0.1", port=args.port, access_log=None, print=None
    )


if __name__ == "__main__":
    main()
