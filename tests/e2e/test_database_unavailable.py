"""PostgreSQL gone (contract §18 "Faults"): the API answers 503 `database_unavailable` naming the
database by host and port (never its password), and works again by itself once it is back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.daemon import Daemon, manage
from harness.fleet import TcpProxy
from harness.services import postgres_database, redis_env, with_password

PASSWORD = "never-shown-9f3a"  # where the local server trusts loopback; else the role's own


@pytest.fixture
def behind_proxy(tmp_path: Path) -> Iterator[tuple[Daemon, TcpProxy, str]]:
    with postgres_database() as database_url:
        proxy = TcpProxy(("127.0.0.1", 5432))
        url, password = with_password(proxy.url_for(database_url), PASSWORD)
        home = tmp_path / "home"
        home.mkdir()
        env = {"DATABASE_URL": url, **redis_env()}
        manage(home, "migrate", "--noinput", "-v", "0", env=env)
        server = Daemon(home, env=env).start()
        try:
            yield server, proxy, password
        finally:
            server.stop()
            proxy.close()


def test_writes_answer_503_naming_the_database_while_it_is_gone(
    behind_proxy: tuple[Daemon, TcpProxy, str], tmp_path: Path
) -> None:
    server, proxy, password = behind_proxy
    headers = server.owner_headers()
    made = httpx.post(f"{server.url}/api/workspaces", json={"path": str(tmp_path)}, headers=headers)
    assert made.status_code == 201, made.text
    rename = f"{server.url}/api/workspaces/{made.json()['id']}"
    proxy.cut()
    for _ in range(2):  # the connection svc kept, then a new one that cannot be made
        gone = httpx.patch(rename, json={"name": "while gone"}, headers=headers, timeout=30)
        assert gone.status_code == 503, gone.text
        error = gone.json()["error"]
        assert error["code"] == "database_unavailable"
        assert (
            f"the database (PostgreSQL at 127.0.0.1:{proxy.port}) is unreachable"
            in error["message"]
        )
        assert password not in gone.text
    assert password not in server.log() + (server.home / "logs" / "svc.log").read_text()
    proxy.restore()
    back = httpx.patch(rename, json={"name": "back"}, headers=headers, timeout=30)
    assert back.status_code == 200, back.text
    assert back.json()["name"] == "back"
