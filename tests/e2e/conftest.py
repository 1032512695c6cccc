"""Fixtures the end-to-end tests share: a previewed static site on the shared daemon, and a real
Vite dev server (hot reload, ES modules) serving the fixture app."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.daemon import Daemon, free_port
from harness.upstream import Upstream

VITE_APP = Path(__file__).resolve().parents[1] / "fixtures" / "previews" / "vite-app"


@pytest.fixture
def vite(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """The fixture app copied to a scratch folder (its node_modules linked), served by Vite."""
    app = tmp_path / "vite-app"
    shutil.copytree(VITE_APP, app, ignore=shutil.ignore_patterns("node_modules"))
    (app / "node_modules").symlink_to(VITE_APP / "node_modules")
    port = free_port()
    proc = subprocess.Popen(
        [str(app / "node_modules" / ".bin" / "vite"), "--host", "127.0.0.1", "--port", str(port)],
        cwd=app,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("vite did not start (run `make test-fixtures`)") from None
                time.sleep(0.1)
        yield port, app
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


@pytest.fixture(scope="module")
def site(daemon: Daemon) -> Iterator[dict]:
    with Upstream() as upstream:
        made = httpx.post(
            f"{daemon.url}/api/previews",
            json={"port": upstream.port, "title": "browser site"},
            headers=daemon.owner_headers(),
        )
        yield made.json()
