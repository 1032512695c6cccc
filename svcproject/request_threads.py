"""Django's HTTP requests on kept threads.

Django's ASGI handler runs each request's sync code (middleware, views) in a thread-sensitive
context of its own, whose thread asgiref starts for the request and ends after it — and with
the thread goes its database connection (Django's are per thread), so every request paid a
thread start and a new SQLite connection (its PRAGMAs and function registrations): about a third
of a small API request. Here each request borrows an idle single-thread executor, kept with its
connection (CONN_MAX_AGE None) for the next request; concurrent requests still each get a
thread of their own, as before. asgiref supports this: a ThreadSensitiveContext given an
executor leaves it running on exit.
"""

from __future__ import annotations

import asyncio
import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler

from core.runtime import until_started

KEEP_IDLE = 8  # threads kept between requests; more are started while more requests run


class KeptThreadsASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self._idle: list[ThreadPoolExecutor] = []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await until_started()  # a request during start answers once it is done
        executor = self._idle.pop() if self._idle else _new_thread()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            if len(self._idle) < KEEP_IDLE:
                self._idle.append(executor)
            else:
                executor.shutdown(wait=False)


def _new_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="svc-request")


class OwnContext:
    """Each connection runs in a context of its own, empty.

    A connection's task copies the context it was created in, and the server can create it from
    a callback registered while a request ran (Twisted re-arms its listening socket from inside
    one after running out of descriptors), so the task would inherit that request's asgiref
    state: its thread-sensitive context, exited once the request ended (asgiref then refuses the
    new connection's database calls: a 500 on the remote listener after a flood of strangers),
    or the request thread's executor, quit by then ("CurrentThreadExecutor already quit": a
    request's end, or a chat's prompt, failed). An empty context starts from neither.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        connection = self.app(scope, receive, send)
        await asyncio.get_running_loop().create_task(connection, context=contextvars.Context())
