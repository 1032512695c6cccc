"""The share's 600 s and the per-request port rules, driven through the real PreviewRouter with an
injected clock (no waiting ten minutes)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from harness.runtime import scoped
from harness.upstream import Upstream
from previews_app import services
from previews_app.asgi import PreviewRouter
from previews_app.models import Preview

pytestmark = pytest.mark.django_db(transaction=True)


class Clock:
    def __init__(self) -> None:
        self.now = timezone.now()

    def __call__(self) -> datetime:
        return self.now


async def inner_app(scope: dict, receive, send) -> None:
    raise AssertionError("preview paths must never reach svc's own routes")


async def call(app: Any, path: str, method: str = "GET") -> tuple[int, dict, bytes]:
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"accept", b"text/html")],
        "server": ("127.0.0.1", 8000),
    }
    sent: list[dict] = []
    messages = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict:
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # the client stays connected
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = sent[0]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], dict(start["headers"]), body


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


async def test_a_share_answers_until_600_seconds_then_410(upstream: Upstream, parts: Any) -> None:
    from asgiref.sync import sync_to_async

    clock = Clock()
    preview = await sync_to_async(services.preview_publish)(port=upstream.port, clock=clock)
    app = scoped(PreviewRouter(inner_app, clock=clock), parts)
    url = f"/preview/s/{preview.share_slug}/echo"
    status, _, body = await call(app, url)
    assert status == 200 and json.loads(body)["path"] == "/echo"
    clock.now += timedelta(seconds=599)
    assert (await call(app, url))[0] == 200
    clock.now += timedelta(seconds=1)
    status, _, body = await call(app, url)
    assert status == 410
    assert b"expired" in body


async def test_a_row_pointing_at_a_denied_port_is_refused_at_request_time(parts: Any) -> None:
    from asgiref.sync import sync_to_async

    from previews_app.selectors import share_seal

    clock = Clock()
    row = Preview(
        slug="sneaky-abc",
        kind=Preview.Kind.PORT,
        port=6379,
        share_slug="a" * 32,
        share_expires_at=clock() + timedelta(seconds=60),
    )
    row.share_seal = share_seal(row)  # even a share svc sealed (tests/e2e/test_database_writer.py)
    await sync_to_async(row.save)()
    app = scoped(PreviewRouter(inner_app, clock=clock), parts)
    status, _, _ = await call(app, f"/preview/s/{row.share_slug}/")
    assert status == 403


async def test_a_stream_on_a_share_ends_when_the_share_expires(
    upstream: Upstream, parts: Any
) -> None:
    from asgiref.sync import sync_to_async

    clock = Clock()
    preview = await sync_to_async(services.preview_publish)(port=upstream.port, clock=clock)
    clock.now += timedelta(seconds=599)  # 1 s of life left; /stream holds its second chunk
    upstream.release.clear()
    status, _, body = await asyncio.wait_for(
        call(
            scoped(PreviewRouter(inner_app, clock=clock), parts),
            f"/preview/s/{preview.share_slug}/stream",
        ),
        5,
    )
    assert status == 200
    assert body.startswith(b"first") and b"second" not in body
