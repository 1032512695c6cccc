"""ACP's wire for the scripted agent (acp_agent.py): JSON-RPC 2.0 over stdio, one JSON object
per line, spoken directly rather than through the SDK (whose import costs ~0.55 s of CPU)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

LINE_LIMIT = 64 * 1024 * 1024  # a prompt with a large pasted file is one line
Handler = Callable[[Any, dict[str, Any]], Awaitable[Any]]


class RequestError(Exception):
    """A JSON-RPC error answered to the request being handled."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error = {"code": code, "message": message, **({"data": data} if data else {})}


class Connection:
    """JSON-RPC over stdio: requests from svc run as tasks (a cancel arrives mid-prompt), and
    the agent's own requests (permission) wait for svc's answer."""

    def __init__(self, agent: Any, methods: dict[str, Handler]) -> None:
        self.agent, self.methods = agent, methods
        self.writer: asyncio.StreamWriter | None = None
        self.pending: dict[int, asyncio.Future] = {}
        self.next_id = 0
        self.tasks: set[asyncio.Task] = set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout
        )
        self.writer = asyncio.StreamWriter(transport, protocol, None, loop)
        while line := await reader.readline():
            if line.strip():
                self.received(json.loads(line))

    def received(self, message: dict[str, Any]) -> None:
        if "method" not in message:  # an answer to one of the agent's requests
            future = self.pending.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message)
            return
        task = asyncio.ensure_future(self.handle(message))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def handle(self, message: dict[str, Any]) -> None:
        handler = self.methods.get(message["method"])
        try:
            if handler is None:
                raise RequestError(-32601, "Method not found", {"method": message["method"]})
            result = await handler(self.agent, message.get("params") or {})
            reply: dict[str, Any] = {"result": result if result is not None else {}}
        except RequestError as error:
            reply = {"error": error.error}
        except Exception as error:  # what the SDK answers for an agent's own bug
            reply = {"error": RequestError(-32603, "Internal error", {"details": str(error)}).error}
        if "id" in message:
            await self.send({"jsonrpc": "2.0", "id": message["id"], **reply})

    async def send(self, message: dict[str, Any]) -> None:
        assert self.writer is not None
        self.writer.write(json.dumps(message).encode() + b"\n")
        await self.writer.drain()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        answer = await future
        if "error" in answer:
            raise RequestError(**answer["error"])
        return answer["result"]


def text_chunk(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def allow_or_reject(allow_name: str = "Allow") -> list[dict[str, str]]:
    return [
        {"optionId": "allow", "name": allow_name, "kind": "allow_once"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ]
