"""What a starting daemon does once: learn its port, reconcile sessions, mirror settings, watch
settings.json, and on shutdown stop every child process and the MCP session manager."""

from __future__ import annotations

import asyncio
import gc
import logging
import sys

from asgiref.sync import sync_to_async

from svcproject import config, server_compat

logger = logging.getLogger(__name__)
_started = False
_watchers: dict[int, asyncio.Task] = {}


def announce() -> None:
    """Once the daemon is bound: record the real port, then print the login URL. Outside
    Twisted (an in-process test, another server) the first request's scope tells the port."""
    if not server_compat.when_listening(_bound):
        print_login_url()


def _bound(port: int) -> None:
    config.declare_listening_port(port)
    print_login_url()
    freeze_startup_objects()


def freeze_startup_objects() -> None:
    """Everything loaded at start (Django, the apps, the SDKs: hundreds of thousands of objects)
    lives as long as the daemon. Frozen, the cyclic collector stops walking it on every full
    collection: those walks were the 100+ ms stalls at the bridge's p99."""
    gc.collect()
    gc.freeze()


def print_login_url() -> None:
    """Once, to the terminal only: the URL carries the owner token, so never to a log."""
    if sys.stderr.isatty() or config.knobs().print_login:
        from svcproject.browser import login_url

        sys.stderr.write(f"\nsvc is running. Open the dashboard:\n    {login_url()}\n\n")
        sys.stderr.flush()


def _start_sync() -> None:
    from sessions_app import services as session_services
    from sessions_app import subagents
    from svcproject import services

    ended = session_services.sessions_reconcile()
    if ended:
        logger.info("marked %d sessions exited: their processes are gone", ended)
    if cut := subagents.turns_reconcile():
        logger.info("ended %d subagent turns that were running when svc stopped", cut)
    services.settings_sync()


async def _watch_settings() -> None:
    from svcproject import services

    last = None
    while True:
        try:
            last_seen = config.settings_path().stat().st_mtime_ns
        except FileNotFoundError:
            last_seen = None
        if last is not None and last_seen != last:
            try:
                await sync_to_async(services.settings_sync)()
            except Exception:
                logger.exception("could not apply the changed settings.json")
        last = last_seen
        await asyncio.sleep(1.0)


def _install_shutdown_hook() -> None:
    if "twisted.internet.reactor" not in sys.modules:
        return
    from twisted.internet import defer, reactor

    async def shutdown() -> None:
        from mcp_app.asgi import lazy_mcp_app
        from sessions_app.host import shutdown as host_shutdown

        await host_shutdown.stop_all()
        await lazy_mcp_app.stop()

    def trigger() -> defer.Deferred:
        return defer.Deferred.fromFuture(asyncio.ensure_future(shutdown()))

    reactor.addSystemEventTrigger("before", "shutdown", trigger)


async def ensure_started() -> None:
    global _started
    if not _started:
        _started = True
        await sync_to_async(_start_sync)()
        _install_shutdown_hook()
    loop = asyncio.get_running_loop()
    if id(loop) not in _watchers or _watchers[id(loop)].done():
        _watchers[id(loop)] = loop.create_task(_watch_settings())


_port_known = False


def _learn_port(port: int | None) -> None:
    global _port_known
    _port_known = True
    if port and not server_compat.listening_tcp_ports():
        config.declare_listening_port(port)


class StartupMiddleware:
    """Runs ensure_started before the first request of the process (daphne has no lifespan)."""

    def __init__(self, app) -> None:  # type: ignore[no-untyped-def]
        self.app = app

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        if scope["type"] in ("http", "websocket"):
            if not _port_known and scope.get("server"):
                _learn_port(scope["server"][1])
            await ensure_started()
        await self.app(scope, receive, send)
