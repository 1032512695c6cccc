"""Django's HTTP requests on kept threads.

Django's ASGI handler runs each request's sync code (middleware, views) in a thread-sensitive
context of its own, whose thread asgiref starts for the request and ends after it — and with
the thread goes its database connection (Django's are per thread), so every request paid a
thread start and a new SQLite connection (its PRAGMAs and function registrations): about a third
of a small API request. Here each request borrows an idle single-thread executor, kept with its
connection (CONN_MAX_AGE None) for the next request; concurrent requests still each get a
thread of their own, as before. asgiref supports this: a ThreadSensitiveContext given an
executor leaves it running on exit.

A client that leaves before its answer (a page closed or left while a save runs) must not leave a
traceback: Django cancels the view, but a sync view's thread runs on to its end, and daphne kills
an application still running 10 s after its client left (`application_close_timeout`), logging
"took too long to shut down" — and Django's end-of-request work then fails on the executor the
kill took away ("CurrentThreadExecutor already quit"). So the handler answers daphne as soon as the
client has gone and lets the request finish by itself, with one quiet line (docs/dashboard.md).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler

from core import parts

logger = logging.getLogger(__name__)

KEEP_IDLE = 8  # threads kept between requests; more are started while more requests run
ORPHAN_GRACE_S = 0.5  # how long a request whose client left may take to end before it is let go


class KeptThreadsASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self._idle: list[ThreadPoolExecutor] = []
        # Requests whose client left, finishing by themselves (held, so none is collected early).
        self._orphans: set[asyncio.Task] = set()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        # A request during start answers once it is done.
        await parts.of(scope).runtime.until_started()
        left = asyncio.Event()

        async def watched() -> dict:
            message = await receive()
            if message["type"] == "http.disconnect":
                left.set()
            return message

        serving = asyncio.ensure_future(self._serve(scope, watched, send))
        gone = asyncio.ensure_future(left.wait())
        try:
            await asyncio.wait({serving, gone}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            serving.cancel()
            raise
        finally:
            gone.cancel()
        if not serving.done():
            # An async view or a streamed answer ends at once when cancelled: only a sync
            # view's thread, which nothing can stop, is left to finish by itself.
            await asyncio.wait({serving}, timeout=ORPHAN_GRACE_S)
        if serving.done():
            serving.result()  # its exception, if any, is the server's to log as before
            return
        logger.info(
            "%s %s: the client left before the answer; the request finishes without it",
            scope.get("method", ""),
            scope.get("path", ""),
        )
        self._orphans.add(serving)
        serving.add_done_callback(functools.partial(_orphan_done, self._orphans))

    async def _serve(self, scope: dict, receive: Any, send: Any) -> None:
        executor = self._idle.pop() if self._idle else _new_thread()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            if len(self._idle) < KEEP_IDLE:
                self._idle.append(executor)
            else:
                executor.shutdown(wait=False)


def _orphan_done(orphans: set[asyncio.Task], task: asyncio.Task) -> None:
    orphans.discard(task)
    if not task.cancelled() and task.exception() is not None:
        # Nobody waits for its answer any more: what went wrong is worth one line, not a trace.
        logger.info("a request whose client left ended with %r", task.exception())


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
