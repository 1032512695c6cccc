"""Private Redis and PostgreSQL that speak TLS only, for the fleet's TLS tests
(docs/fleet-setup.md): a certificate authority made for the test (trustme), a `redis-server` whose
plain port is closed (`--port 0`), and a PostgreSQL cluster whose pg_hba.conf trusts `hostssl`
lines and rejects every connection without encryption. Each listens on 127.0.0.1 on a free port
and is gone afterwards.

    with certificates(root) as certs, tls_redis(certs) as redis, tls_postgres(certs) as pg:
        env = {"SVC_REDIS_URL": redis.url, "DATABASE_URL": pg.url("verify-full")}

The machine's shared Redis and PostgreSQL are never touched. Missing binaries or a redis-server
built without TLS fail the test with the reason (never a skip: TLS is a supported setup).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
import redis
import trustme

from harness.daemon import free_port

START_TIMEOUT_S = 15.0
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Certificates:
    """A CA and one server certificate for 127.0.0.1 and localhost, as PEM files."""

    ca: Path
    server_cert: Path
    server_key: Path


@contextlib.contextmanager
def certificates(root: Path) -> Iterator[Certificates]:
    ca = trustme.CA(organization_name="svc fleet test CA")
    server = ca.issue_cert(HOST, "localhost")
    root.mkdir(parents=True, exist_ok=True)
    certs = Certificates(root / "ca.pem", root / "server.crt", root / "server.key")
    ca.cert_pem.write_to_path(str(certs.ca))
    certs.server_cert.write_bytes(b"".join(pem.bytes() for pem in server.cert_chain_pems))
    server.private_key_pem.write_to_path(str(certs.server_key))
    certs.server_key.chmod(0o600)
    yield certs


# --- Redis ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TlsRedis:
    port: int
    ca: Path

    @property
    def url(self) -> str:
        """The URL a member is given: the CA that signed the server's certificate travels in it,
        so the bus and the channel layer (both redis-py `from_url`) trust it and nothing else."""
        return f"rediss://{HOST}:{self.port}/0?ssl_ca_certs={quote(str(self.ca))}"

    @property
    def url_without_ca(self) -> str:
        """The same server, trusted only through the system's CAs: which do not know ours."""
        return f"rediss://{HOST}:{self.port}/0"


def _redis_answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


@contextlib.contextmanager
def tls_redis(certs: Certificates) -> Iterator[TlsRedis]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed (apt-get install redis-server)")
    workdir = Path(tempfile.mkdtemp(prefix="svc-tls-redis-"))
    log = workdir / "redis.log"
    server = TlsRedis(free_port(), certs.ca)
    # stdout to the log: a build without TLS says so there, and the failure shows it.
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                binary,
                *("--port", "0", "--tls-port", str(server.port), "--bind", HOST),
                *("--tls-cert-file", str(certs.server_cert)),
                *("--tls-key-file", str(certs.server_key)),
                *("--tls-ca-cert-file", str(certs.ca)),
                *("--tls-auth-clients", "no"),  # members prove themselves by the fleet secret
                *("--save", "", "--appendonly", "no", "--dir", str(workdir)),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _redis_answers(server.url):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the TLS redis-server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        yield server
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)
        if process.poll() is None:
            process.kill()
            process.wait()
        shutil.rmtree(workdir, ignore_errors=True)


# --- PostgreSQL ----------------------------------------------------------------------------------

# hostssl only: a connection without TLS matches the reject line and is refused, which is how the
# test knows the members' connections are encrypted. No Unix socket at all (see the conf below).
PG_HBA = """\
hostssl all all 127.0.0.1/32 trust
hostnossl all all 0.0.0.0/0 reject
"""


INITDB = ("--auth=trust", "-E", "UTF8", "--locale=C")
WAIT = ("-w", "-t", str(int(START_TIMEOUT_S)), "start")


@dataclass(frozen=True)
class TlsPostgres:
    port: int
    ca: Path
    database: str = "svc_fleet_tls"

    def url(self, sslmode: str = "verify-full", database: str = "") -> str:
        """A DATABASE_URL: `verify-full` checks the certificate against the CA and the host name;
        `require` only encrypts; `disable` is refused by this server."""
        query = f"sslmode={sslmode}"
        if sslmode.startswith("verify-"):
            query += f"&sslrootcert={quote(str(self.ca))}"
        return f"postgresql://postgres@{HOST}:{self.port}/{database or self.database}?{query}"


def _pg_bindir() -> Path:
    if given := os.environ.get("SVC_TEST_PG_BIN"):
        return Path(given)
    # Debian's layout, newest major version first; else whatever initdb is on PATH.
    installed = [p for p in Path("/usr/lib/postgresql").glob("*/bin") if p.parent.name.isdigit()]
    versions = sorted(installed, key=lambda p: int(p.parent.name))
    if versions:
        return versions[-1]
    if initdb := shutil.which("initdb"):
        return Path(initdb).parent
    pytest.fail(
        "PostgreSQL's initdb was not found (apt-get install postgresql, or SVC_TEST_PG_BIN)"
    )


def _as_postgres(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """PostgreSQL refuses to run as root: as root, run it as the `postgres` user."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run(prefix + args, cwd=cwd, capture_output=True, text=True, timeout=60)


def _chown_to_postgres(path: Path) -> None:
    if os.geteuid() != 0:
        return
    for item in (path, *path.rglob("*")):
        shutil.chown(item, "postgres", "postgres")


@contextlib.contextmanager
def tls_postgres(certs: Certificates) -> Iterator[TlsPostgres]:
    bindir = _pg_bindir()
    # Outside pytest's tmp folders, which are root's alone: the postgres user must reach it.
    workdir = Path(tempfile.mkdtemp(prefix="svc-tls-pg-"))
    data = workdir / "data"
    server = TlsPostgres(free_port(), certs.ca)
    try:
        shutil.copy(certs.server_cert, workdir / "server.crt")
        shutil.copy(certs.server_key, workdir / "server.key")
        (workdir / "server.key").chmod(0o600)  # PostgreSQL refuses a key others can read
        _chown_to_postgres(workdir)
        made = _as_postgres(
            [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--no-sync", *INITDB],
            workdir,
        )
        if made.returncode != 0:
            pytest.fail(f"initdb failed: {made.stdout}{made.stderr}")
        with (data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"listen_addresses = '{HOST}'\nport = {server.port}\n"
                "unix_socket_directories = ''\n"
                f"ssl = on\nssl_cert_file = '{workdir / 'server.crt'}'\n"
                f"ssl_key_file = '{workdir / 'server.key'}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
            )
        (data / "pg_hba.conf").write_text(PG_HBA)
        _chown_to_postgres(data)
        started = _as_postgres(
            [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(workdir / "postgres.log"), *WAIT],
            workdir,
        )
        if started.returncode != 0:
            log = workdir / "postgres.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            pytest.fail(f"the TLS PostgreSQL did not start: {started.stderr}{tail}")
        with psycopg.connect(server.url(database="postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{server.database}"')
        yield server
    finally:
        if (data / "postmaster.pid").exists():
            _as_postgres(
                [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], workdir
            )
        shutil.rmtree(workdir, ignore_errors=True)
