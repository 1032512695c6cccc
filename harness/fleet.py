"""A fleet on this machine (contract §18): N members sharing one fresh PostgreSQL database and one
Redis prefix, each with its own $SVC_HOME, HOME and port, and the settings
`fleet: {enabled, machine, secret}`. Members can be killed (SIGKILL) and started again, and more
can join later (one with another secret, to see it refused).

    with running_fleet(tmp_path) as fleet:
        a, b, c = fleet.daemon("a"), fleet.daemon("b"), fleet.daemon("c")

Also a TCP proxy to PostgreSQL that a test can cut and restore: a database "gone" for one
member without stopping the server every test shares.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg

from harness.daemon import Daemon, manage
from harness.services import postgres_database, redis_env


def fleet_secret() -> str:
    return secrets.token_hex(20)  # 40 characters


@dataclass
class Member:
    name: str
    daemon: Daemon
    secret: str

    @property
    def home(self) -> Path:
        return self.daemon.home

    @property
    def machine_id(self) -> str:
        return json.loads((self.home / "machine.json").read_text())["id"]

    @property
    def schema(self) -> str:
        return f"svc_m_{self.machine_id[:12]}"


@dataclass
class Fleet:
    root: Path
    database_url: str
    redis: dict[str, str]
    secret: str = field(default_factory=fleet_secret)
    members: dict[str, Member] = field(default_factory=dict)
    extra_settings: dict = field(default_factory=dict)  # every member's, beside `fleet`

    def settings(self, name: str, secret: str) -> dict:
        fleet = {"fleet": {"enabled": True, "machine": name, "secret": secret}}
        return {**self.extra_settings, **fleet}

    def add(
        self,
        name: str,
        *,
        secret: str | None = None,
        start: bool = True,
        env: dict[str, str] | None = None,
    ) -> Member:
        """A new member: its folders, settings, migrated schema, and (by default) its daemon.
        `env` overrides the fleet's environment for this member alone (another URL to the same
        Redis or database, e.g. without the CA that signed its certificate)."""
        base = self.root / name
        home, user_home = base / "svc", base / "home"
        home.mkdir(parents=True)
        user_home.mkdir()
        secret = secret or self.secret
        (home / "settings.json").write_text(json.dumps(self.settings(name, secret), indent=2))
        env = {
            "DATABASE_URL": self.database_url,
            **self.redis,
            "HOME": str(user_home),
            "SHELL": "/bin/bash",
            **(env or {}),
        }
        manage(home, "migrate", "--noinput", "-v", "0", env=env)
        member = Member(name, Daemon(home, env=env), secret)
        self.members[name] = member
        if start:
            member.daemon.start()
        return member

    def add_many(self, names: tuple[str, ...]) -> list[Member]:
        """Members made and started side by side (each migrates its own schema)."""
        with ThreadPoolExecutor(len(names)) as pool:
            return list(pool.map(self.add, names))

    def daemon(self, name: str) -> Daemon:
        return self.members[name].daemon

    def kill(self, name: str) -> None:
        """SIGKILL the member's daemon (its held sessions stay with their holder)."""
        self.daemon(name).kill()

    def start(self, name: str) -> Daemon:
        return self.daemon(name).start()

    def remove(self, name: str) -> None:
        self.members.pop(name).daemon.stop()

    def stop(self) -> None:
        for member in self.members.values():
            with contextlib.suppress(Exception):
                member.daemon.stop()

    def sql(self, query: str, *params: object) -> list[tuple]:
        """A query on the fleet's database, as its owner (outside every member)."""
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            return conn.execute(query, params).fetchall()


@contextlib.contextmanager
def running_fleet(
    root: Path,
    names: tuple[str, ...] = ("a", "b", "c"),
    settings: dict | None = None,
    redis: dict[str, str] | None = None,
) -> Iterator[Fleet]:
    """`redis`: the members' SVC_REDIS_URL and SVC_REDIS_PREFIX (default: the machine's Redis,
    with a prefix of the fleet's own: one prefix, one fleet)."""
    with postgres_database() as database_url:
        fleet = Fleet(root, database_url, redis or redis_env(), extra_settings=settings or {})
        try:
            fleet.add_many(names)
            yield fleet
        finally:
            fleet.stop()


# --- PostgreSQL through a proxy a test can cut --------------------------------------------------


class TcpProxy:
    """Forwards 127.0.0.1:<port> to a target. `cut()` closes every connection and refuses new
    ones (the server looks gone); `restore()` listens again on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = self._listen(0)
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._accepting()

    def url_for(self, database_url: str) -> str:
        """`database_url` pointed at this proxy."""
        parts = urlsplit(database_url)
        user = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    def _listen(self, port: int) -> socket.socket:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        return listener

    def _accepting(self) -> None:
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        self._listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def restore(self) -> None:
        self._listener = self._listen(self.port)
        self._accepting()

    def close(self) -> None:
        self.cut()


# --- what the fleet's tests ask of a member -------------------------------------------------------


def api(
    daemon: Daemon, method: str, path: str, headers: dict | None = None, **kwargs: Any
) -> httpx.Response:
    """A request with the member's owner token (and any other `headers`)."""
    headers = {**daemon.owner_headers(), **(headers or {})}
    return httpx.request(method, f"{daemon.url}{path}", headers=headers, timeout=60, **kwargs)


def statuses(daemon: Daemon) -> dict[str, str]:
    """Each machine's status as this member sees it, by name."""
    return {m["name"]: m["status"] for m in api(daemon, "GET", "/api/machines").json()}


def wait_for(read: Callable[[], Any], wanted: Callable[[Any], Any], timeout: float = 20) -> Any:
    """Read until `wanted(value)` (a fleet's news takes a heartbeat or a publication); the value."""
    deadline = time.monotonic() + timeout
    while not wanted(value := read()):
        assert time.monotonic() < deadline, f"never: {value}"
        time.sleep(0.1)
    return value


def workspace_of(fleet: Fleet, name: str) -> str:
    """The folder `hosting_fleet` registered as member `name`'s workspace."""
    return str(fleet.root / f"work-{name}")


@contextlib.contextmanager
def hosting_fleet(
    root: Path, names: tuple[str, ...] = ("a", "b", "c"), redis: dict[str, str] | None = None
) -> Iterator[Fleet]:
    """A running fleet that hosts the fake agent, a workspace `work-<name>` registered on each
    member, every member seeing every other online."""
    from harness.termclient import hosting_settings

    with running_fleet(root, names, settings=hosting_settings(), redis=redis) as fleet:
        for name, member in fleet.members.items():
            Path(workspace_of(fleet, name)).mkdir()
            api(member.daemon, "POST", "/api/workspaces", json={"path": workspace_of(fleet, name)})
        everyone = dict.fromkeys(names, "online")
        for member in fleet.members.values():
            wait_for(lambda m=member: statuses(m.daemon), lambda seen: seen == everyone)
        yield fleet
