"""A real SSH server for the tunnel tests (asyncssh's server side), run as its own process so a
test can take it away and bring it back: public-key login for one user, reverse and local port
forwards allowed, and a session that prints `--banner` (how localhost.run tells its URL).

    python -m harness.fakes.ssh_server --port P --host-key F --authorized-keys F [--banner TEXT]
"""

from __future__ import annotations

import argparse
import asyncio
import signal

import asyncssh


class Server(asyncssh.SSHServer):
    def server_requested(self, listen_host: str, listen_port: int) -> bool:
        return True  # reverse forwards are what this server is for

    def connection_requested(
        self, dest_host: str, dest_port: int, orig_host: str, orig_port: int
    ) -> bool:
        return True  # local forwards too: what `ssh -L` (the Remote view's SSH command) asks

    def begin_auth(self, username: str) -> bool:
        return True


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host-key", required=True)
    parser.add_argument("--authorized-keys", required=True)
    parser.add_argument("--banner", default="")
    args = parser.parse_args()

    def session(process: asyncssh.SSHServerProcess) -> None:
        if args.banner:
            process.stdout.write(args.banner + "\n")
        # Stays open like a real tunnel service's session; ends with the connection.

    server = await asyncssh.listen(
        "127.0.0.1",
        args.port,
        server_factory=Server,
        server_host_keys=[args.host_key],
        authorized_client_keys=args.authorized_keys,
        process_factory=session,
        encoding="utf-8",
    )
    print("ready", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
