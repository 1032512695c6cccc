"""Issue 41 (low): a hosted agent read the fleet secret and the database's and Redis's passwords
from svc's own `/proc/<pid>/environ`. Every process of the owner's user can read that file, and
it shows the environment svc was started with.

A fleet member is started as a person starts one (docs/fleet-setup.md): a cold interpreter, the
fleet secret in the variable `fleet.secret_env` names, `DATABASE_URL` and `SVC_REDIS_URL` with
passwords in them (the PostgreSQL here trusts any password; the Redis is one of the test's own
with `requirepass`). An agent svc hosts then reads every `/proc/*/environ` it can — svc's, its
holder's, its own ancestors' — and none may show a secret, while the member works (it is online
in the fleet: its Redis password and fleet secret are in use).
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.daemon import Daemon, manage
from harness.own_redis import OwnRedis
from harness.services import postgres_database, require, with_password

# The agent: every environment it can read, and its ancestors' command lines (its holder).
PEEK = """\
import json, os, sys
seen = {}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            seen[pid] = f.read().decode("utf-8", "replace")
    except OSError:
        pass
ancestors, pid = {}, os.getpid()
while pid > 1:
    with open(f"/proc/{pid}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        ancestors[str(pid)] = f.read().decode("utf-8", "replace").split("\\0")
with open(sys.argv[1] + ".tmp", "w") as f:
    json.dump({"environ": seen, "ancestors": ancestors}, f)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
"""


SEEN = "seen.json"  # in the session's workspace


@pytest.fixture
def member(tmp_path: Path) -> Iterator[tuple[Daemon, dict[str, str]]]:
    require(5432, "PostgreSQL")
    secret = {
        "pg": f"pg-{secrets.token_hex(8)}",
        "redis": f"redis-{secrets.token_hex(8)}",
        "fleet": f"fleet-{secrets.token_hex(20)}",
    }
    redis = OwnRedis(password=secret["redis"]).start()
    (tmp_path / "peek.py").write_text(PEEK)
    settings = {
        "fleet": {"enabled": True, "machine": "a", "secret_env": "MY_FLEET_KEY"},
        "agents": {"peek": {"command": [sys.executable, str(tmp_path / "peek.py"), SEEN]}},
    }
    home = tmp_path / "svc"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps(settings))
    try:
        with postgres_database() as url:
            url, secret["pg"] = with_password(url, secret["pg"])
            env = {
                "DATABASE_URL": url,
                **redis.env(),
                "MY_FLEET_KEY": secret["fleet"],
                "HOME": str(tmp_path),
            }
            assert secret["pg"] in env["DATABASE_URL"] and secret["redis"] in env["SVC_REDIS_URL"]
            manage(home, "migrate", "--noinput", "-v", "0", env=env)
            daemon = Daemon(home, env=env, cold=True).start(timeout=90)  # as `bin/svc run`
            try:
                yield daemon, secret
            finally:
                daemon.stop()
    finally:
        redis.kill()


def online(daemon: Daemon) -> dict:
    deadline = time.monotonic() + 30
    while True:
        status = httpx.get(f"{daemon.url}/api/status", headers=daemon.owner_headers()).json()
        if status["fleet"]["status"] == "online" or time.monotonic() > deadline:
            return status["fleet"]
        time.sleep(0.2)


def test_a_hosted_agent_reads_no_secret_in_svcs_or_its_holders_environment(
    member: tuple[Daemon, dict[str, str]], tmp_path: Path
) -> None:
    daemon, secret = member
    assert online(daemon)["status"] == "online"  # Redis's password and the secret are in use
    workspace = tmp_path / "ws"
    workspace.mkdir()
    out = workspace / SEEN
    created = httpx.post(
        f"{daemon.url}/api/sessions",
        json={"agent": "peek", "workspace": str(workspace)},
        headers=daemon.owner_headers(),
    )
    assert created.status_code == 201, created.text
    deadline = time.monotonic() + 30
    while not out.exists():
        assert time.monotonic() < deadline, "the agent never wrote what it saw"
        time.sleep(0.05)
    seen = json.loads(out.read_text())
    assert daemon.proc is not None
    svc_pid = str(daemon.proc.pid)
    assert svc_pid in seen["environ"], "the agent could not read svc's environment at all"
    holder = next(p for p, argv in seen["ancestors"].items() if argv[1:3] == ["-m", "holder"])
    for name, value in secret.items():
        assert value not in seen["environ"][svc_pid], f"svc's environment shows the {name} one"
        assert value not in seen["environ"][holder], f"the holder's shows the {name} one"
        shown = [pid for pid, env in seen["environ"].items() if value in env]
        assert shown == [], f"/proc/{shown}/environ shows the {name} secret"
