"""A local HTTP server for Apprise's `json://127.0.0.1:PORT/path` URLs: records each JSON body
Apprise posts (`{"version", "title", "message", "type", …}`), per path; a path may be told to
answer 500."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from harness.fakes.push_endpoint import ThreadedApp


@dataclass
class Posted:
    path: str
    body: dict[str, Any]


class JsonSink(ThreadedApp):
    def __init__(self) -> None:
        super().__init__()
        self.posted: list[Posted] = []
        self.failing: set[str] = set()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{path:.*}", self.handle)
        return app

    def apprise_url(self, path: str) -> str:
        return f"json://127.0.0.1:{self.port}/{path}"

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [p.body for p in self.posted if p.path == path]

    async def handle(self, request: web.Request) -> web.Response:
        path = request.match_info["path"]
        if path in self.failing:
            return web.Response(status=500)
        self.posted.append(Posted(path, json.loads(await request.read())))
        return web.Response(status=200)
