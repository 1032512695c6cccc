"""Start at bind (contract §12): once daphne's listening socket is bound — `make run`,
`manage.py runserver` or `daphne` alike, and before any request — record the port, build the
runtime and start it; at reactor shutdown (SIGINT/SIGTERM) stop it.

Outside Twisted (a test in-process, another ASGI server) nothing starts here: the caller builds
and starts a Runtime itself (harness/runtime.py)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import sys

from twisted.internet import defer

from cli import port_owner
from core import config, connection_budget, listen_failure, server_compat, twisted_reactor
from core.browser import login_url
from core.runtime import Runtime
from svcproject import assembly
from svcproject.parts import InScope

logger = logging.getLogger(__name__)

START_WAIT_S = 3.0  # for a start still under way when the stop comes
STOP_LIMIT_S = 5.0  # within the 10 s the contract allows, leaving time for the reactor's own end


def at_bind(application: InScope) -> bool:
    """Arrange the start for when the daemon is bound, which hands `application` (the ASGI
    module's outermost app) the parts it puts in every scope; False when not running under
    Twisted. A bind that fails ends start-up with a non-zero exit and one line
    (listen_failure_line)."""
    listen_failure.exit_on_listen_failure(listen_failure_line)
    return server_compat.when_listening(lambda port: _bound(port, application))


def listen_failure_line(port: int, interface: str, error: OSError | None) -> str:
    """The one line svc exits with when it cannot bind: for a port in use, who holds it."""
    if port and (error is None or error.errno == errno.EADDRINUSE):
        auth = config.current_auth()
        return port_owner.port_in_use_line(
            port, interface, auth.browser_host, str(config.svc_home())
        )
    reason = error.strerror if error is not None and error.strerror else str(error or "")
    where = f"port {port}" + (f" on {interface}" if interface else "")
    return f"svc: cannot start: cannot listen on {where}: {reason}"


def _bound(port: int, application: InScope) -> None:
    before, after = connection_budget.raise_open_files_limit()
    if after != before:
        logger.info("open files limit raised from %d to %d", before, after)
    config.declare_listening_port(port)
    parts = assembly.build()
    application.parts = parts  # from now on every connection's scope carries them
    runtime = parts.runtime
    runtime.remote_port = bind_remote_listener()
    task = asyncio.get_event_loop().create_task(_start(runtime), name="svc runtime start")
    _stop_at_shutdown(runtime, task)
    print_login_url()
    freeze_startup_objects()


def bind_remote_listener() -> int:
    """The second socket (contract §13), bound now, beside the main one; 0 when it cannot be:
    then svc runs without remote access and says why (tunnels show it too). With `remote.port`
    0, the port of the previous run is taken again when it is free, so what points at it (a
    named tunnel's route, a firewall rule) keeps working across restarts."""
    settings = config.current_settings()
    configured, previous = settings.remote_port, config.current_auth().remote_port
    budget = (settings.remote_max_connections, settings.remote_header_timeout_s)
    port = 0
    for wanted in [configured] if configured else [previous, 0] if previous else [0]:
        try:
            port = server_compat.listen_beside(wanted, *budget)
            break
        except Exception as exc:
            logger.log(
                logging.INFO if wanted == previous else logging.ERROR,
                "svc's remote listener could not be bound on port %s: %s",
                wanted,
                exc,
            )
    config.declare_remote_port(port)
    return port


async def _start(runtime: Runtime) -> None:
    try:
        await runtime.start()
    except Exception as exc:
        logger.exception("svc could not start")
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        listen_failure.fail_start(f"svc: cannot start: {reason}")
        raise
    freeze_startup_objects()  # again: what start built (the MCP app, the mirrors) lives on too


def _stop_at_shutdown(runtime: Runtime, starting: asyncio.Task) -> None:
    async def stop() -> None:
        # A start still under way is let finish, not cancelled: its database work runs in a
        # worker thread that a cancel does not stop, and that thread may still need this loop
        # (a list broadcast after a mirrored row): the process would then hang at exit.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(starting), START_WAIT_S)
        try:
            await asyncio.wait_for(runtime.stop(), STOP_LIMIT_S)
        except TimeoutError:
            logger.warning("svc's stop took longer than %g s; exiting anyway", STOP_LIMIT_S)
        await _cancel_leftover_tasks()

    def trigger() -> defer.Deferred:
        return defer.Deferred.fromFuture(asyncio.ensure_future(stop()))

    twisted_reactor.installed().addSystemEventTrigger("before", "shutdown", trigger)


async def _cancel_leftover_tasks() -> None:
    """What `asyncio.run` does at its end, and daphne's reactor shutdown does not: tasks still
    pending (a WebSocket consumer's writer, say) are cancelled and awaited, so none is destroyed
    while pending when the loop closes."""
    leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in leftover:
        task.cancel()
    if leftover:
        await asyncio.wait(leftover, timeout=1.0)


def freeze_startup_objects() -> None:
    """Everything loaded at start (Django, the apps, the SDKs: hundreds of thousands of objects)
    lives as long as the daemon. Frozen, the cyclic collector stops walking it on every full
    collection: those walks were the 100+ ms stalls at the bridge's p99."""
    gc.collect()
    gc.freeze()


def print_login_url() -> None:
    """Once, to the terminal only: the URL carries the owner token, so never to a log."""
    if sys.stderr.isatty() or config.knobs().print_login:
        sys.stderr.write(f"\nsvc is running. Open the dashboard:\n    {login_url()}\n\n")
        sys.stderr.flush()
