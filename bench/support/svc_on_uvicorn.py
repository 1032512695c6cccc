"""svc's own ASGI application served by uvicorn, for bench/bridge.py: how much of the bridge's
gap to a raw proxy on uvicorn svc would close by changing server alone.

Not a way to run svc. Outside Twisted svc starts nothing at bind and installs none of its server
hooks (core.server_compat), so this module does what the daemon does at bind in the ASGI
lifespan (build the parts, hand them to the ASGI app, start them, freeze the start-up objects)
and no more: no admission before the body (the bridge gate still runs in the app), no remote
listener, no WebSocket backpressure or message-size hooks. docs/performance.md lists what each
would take.

    SVC_HOME=… BENCH_PORT=… uvicorn --host 127.0.0.1 --port $BENCH_PORT \
        bench.support.svc_on_uvicorn:app
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "svcproject.settings")

from svcproject.asgi import application


async def _lifespan(receive: Any, send: Any) -> None:
    from core import config
    from svcproject import assembly, startup

    await receive()  # lifespan.startup
    config.declare_listening_port(int(os.environ["BENCH_PORT"]))
    parts = assembly.build()
    application.parts = parts  # what startup does at bind: every scope carries them
    runtime = parts.runtime
    await runtime.start()
    startup.freeze_startup_objects()
    await send({"type": "lifespan.startup.complete"})
    await receive()  # lifespan.shutdown
    await runtime.stop()
    await send({"type": "lifespan.shutdown.complete"})


async def app(scope: dict, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
        return
    await application(scope, receive, send)
