"""bench/remote.py's peer: aiohttp serving static/ at /static/, behind a reverse forward over the
same SSH server as svc's tunnel, in one process and one event loop. Prints `ready <direct port>
<forwarded port>` once both listen; stops on SIGTERM.

    python bench/support/bare_static_peer.py '{"ssh_port": …, "key_file": …, "known_hosts": …,
                                               "remote_port": …}'
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


async def serve_bare(config: dict) -> None:
    """aiohttp serving static/ at /static/, and a reverse forward of it over SSH, in one loop."""
    import asyncssh
    from aiohttp import web

    app = web.Application()
    app.router.add_static("/static/", ROOT / "static")
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    http_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    conn = await asyncssh.connect(
        "127.0.0.1",
        config["ssh_port"],
        username="svc-test",
        client_keys=[config["key_file"]],
        known_hosts=config["known_hosts"],
        agent_path=None,
    )
    listener = await conn.forward_remote_port(
        "127.0.0.1", config["remote_port"], "127.0.0.1", http_port
    )
    print(f"ready {http_port} {listener.get_port()}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    conn.close()
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(serve_bare(json.loads(sys.argv[1])))
