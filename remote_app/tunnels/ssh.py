"""`ssh`: a reverse port forward over SSH, in-process with asyncssh (contract §13) — what any VPS,
localhost.run or pinggy offers. The server's host key must already be known: an unknown or
changed key is an error, never accepted."""

from __future__ import annotations

import asyncio
import getpass
import os
import re
from pathlib import Path
from typing import Any

import asyncssh

from core import network_words
from remote_app.tunnels.base import Options, TunnelError, Up

_URL = re.compile(r"https?://[^\s\"'<>]+")
URL_WAIT_S = 20.0
KEEPALIVE_S = 15.0  # a server that went away is noticed within about three of these


class SSHTunnel:
    def __init__(self, name: str, raw: dict[str, Any]) -> None:
        known = {
            "host",
            "port",
            "user",
            "key_file",
            "known_hosts",
            "remote_host",
            "remote_port",
            "public_url",
            "keepalive_s",
        }
        options = Options(name, raw, known)
        self.key = options.key
        self.host = options.text("host")
        self.port = options.port("port", 22)
        self.user = options.text("user", getpass.getuser())
        self.key_file = os.path.expanduser(options.text("key_file", ""))
        self.known_hosts = Path(options.text("known_hosts", "~/.ssh/known_hosts")).expanduser()
        self.remote_host = options.text("remote_host", "localhost")
        self.remote_port = options.port("remote_port", 0)
        self.public_url = options.text("public_url", "")
        self.keepalive_s = options.seconds("keepalive_s", KEEPALIVE_S)
        if self.key_file and not Path(self.key_file).is_file():
            raise TunnelError(f"{self.key('key_file')}: no such file {self.key_file}")

    async def run(self, port: int, up: Up) -> None:
        async with await self._connect() as conn:
            try:
                listener = await conn.forward_remote_port(
                    self.remote_host, self.remote_port, "127.0.0.1", port
                )
            except asyncssh.ChannelListenError as exc:
                raise TunnelError(
                    f"the SSH server refused the reverse forward of {self.remote_host}:"
                    f"{self.remote_port} ({exc.reason}); check {self.key('remote_port')}"
                ) from exc
            up(await self._url(conn, listener.get_port()))
            await conn.wait_closed()
        raise TunnelError(f"the SSH connection to {self.host}:{self.port} closed")

    async def _connect(self) -> asyncssh.SSHClientConnection:
        if not self.known_hosts.is_file():
            raise TunnelError(
                f"{self.key('known_hosts')}: {self.known_hosts} does not exist; add the server's "
                f"host key (ssh-keyscan -p {self.port} {self.host} >> {self.known_hosts})"
            )
        try:
            return await asyncssh.connect(
                self.host,
                self.port,
                username=self.user,
                client_keys=[self.key_file] if self.key_file else (),
                known_hosts=str(self.known_hosts),
                agent_path=None,
                keepalive_interval=self.keepalive_s,
                keepalive_count_max=3,
                connect_timeout=20,
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            raise TunnelError(
                f"the host key of {self.host}:{self.port} is not in {self.known_hosts} (unknown "
                f"or changed); svc never accepts it by itself: check it, then add it there"
            ) from exc
        except asyncssh.PermissionDenied as exc:
            raise TunnelError(
                f"the SSH server refused user {self.user!r}; check {self.key('user')} and "
                f"{self.key('key_file')}"
            ) from exc
        except (OSError, asyncssh.Error) as exc:
            reason = network_words.reason_of(exc) or " ".join(str(exc).split())
            where = f"{self.host}:{self.port}"
            raise TunnelError(network_words.cannot_reach(where, reason, "the SSH server")) from exc

    async def _url(self, conn: asyncssh.SSHClientConnection, remote_port: int) -> str:
        """The public URL: the template, or the first URL the server prints on a session."""
        if self.public_url:
            return self.public_url.format(remote_port=remote_port)
        process = await conn.create_process(term_type=None, encoding="utf-8")
        try:
            return await asyncio.wait_for(_first_url(process), URL_WAIT_S)
        except TimeoutError as exc:
            raise TunnelError(
                f"the SSH server printed no URL within {URL_WAIT_S:g} s; set "
                f"{self.key('public_url')} (e.g. http://{self.host}:{{remote_port}})"
            ) from exc


async def _first_url(process: asyncssh.SSHClientProcess) -> str:
    async def lines(stream: Any) -> str:
        async for line in stream:
            if found := _URL.search(line):
                return found.group(0)
        await asyncio.Event().wait()  # this stream ended without a URL: the other may have one
        return ""

    tasks = [
        asyncio.ensure_future(lines(process.stdout)),
        asyncio.ensure_future(lines(process.stderr)),
    ]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        return done.pop().result()
    finally:
        for task in tasks:
            task.cancel()
