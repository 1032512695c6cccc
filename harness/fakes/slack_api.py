"""A fake Slack: a real aiohttp server on a loopback port that the unmodified slack-sdk /
slack-bolt clients talk to — the Web API under `{url}/api/` and a Socket Mode WebSocket under
`{url}/socket`. It is written from Slack's public docs and from how slack-sdk's own clients
behave (not from slack-sdk's mock servers), and it records everything.

Point both clients at it with one AsyncWebClient: bolt's AsyncSocketModeHandler defaults its
Socket Mode client's `web_client` to `app.client`, so `apps.connections.open` goes there too:

    client = AsyncWebClient(token=fake.bot_token, base_url=fake.base_url)
    app = AsyncApp(client=client)
    handler = AsyncSocketModeHandler(app, fake.app_token, ping_interval=0.5)
    await handler.connect_async()

Web API (POST form / JSON / query string, token as `Authorization: Bearer` or a `token` param):
every answer is HTTP 200 with `{"ok": false, "error": ...}` on failure, as Slack does —
`not_authed` without a token, `invalid_auth` for an unknown one, `not_allowed_token_type` for a
bot token on `apps.connections.open` (which reads its token from the header only, as its doc
says) or an app-level token elsewhere; `unknown_method` (HTTP 404). Methods: auth.test,
apps.connections.open, chat.postMessage, chat.update, chat.delete, chat.postEphemeral,
reactions.add/remove, conversations.info/history/replies, users.info, files.info; `fail_next()`
forces an error (e.g. `ratelimited` with HTTP 429 and Retry-After). Uploaded files (see
`add_file`) download from `url_private` with the bot token; without a valid one Slack answers a
200 HTML sign-in page, not an error, and so does this fake. `response_url`s of interactions work.

Socket Mode: `apps.connections.open` issues a single-use ticket URL; on connect the server sends
`hello`, then envelopes (`events_api`, `interactive`, `slash_commands`), and records the acks
(`{"envelope_id": ..., "payload"?: ...}`). Delivery follows Slack's rules, with times scaled:
  * an envelope goes to one open connection (round robin; one that was sent `disconnect` only
    when there is no other);
  * an `events_api` delivery that is not acked within `ack_timeout` (3 s, as Slack), whose
    connection closes before the ack, or that finds no connection open, is retried — at most
    3 times, after `retry_delays` (Slack: at once, +1 min, +5 min; here by default a tenth) —
    with a new envelope_id, the same `event_id`, `retry_attempt` n and `retry_reason`
    ("timeout" or "connection_failed"); after the last it is dropped (lost, as on Slack);
  * an interaction (`interactive`, `slash_commands`) is never retried: unacked within
    `ack_timeout` of the click it has failed (the user sees an error on Slack).
  * a user's message gives a `message` event, and an `app_mention` too when it mentions the bot
    outside a DM; the bot's own posts and edits come back as `message` events (bolt skips the
    former; an edit is subtype `message_changed`), unless `echo_own_messages=False`;
  * `disconnect(reason)` sends `{"type": "disconnect", ...}` and closes those sockets after
    `close_after`; `go_away()` drops every socket and answers new ones 503 until `come_back()`.

Test controls are sync and thread-safe: `post_message`, `click`, `slash`, `add_file`,
`fail_downloads`, `redirect_download`, `downloads`,
`posted`, `updates`, `log`, `calls`, `acks`, `envelopes`, `assert_acked_once`, `settled`,
`wait_for` (from a thread) / `wait_for_async` (from the event loop the client runs on: a sync
wait there would stall the client under test).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import threading
from collections.abc import Iterable
from typing import Any

from aiohttp import web

from harness.fakes.slack_controls import Controls
from harness.fakes.slack_observations import Observations
from harness.fakes.slack_records import Ack, Call, Connection, Envelope, Item
from harness.fakes.slack_socket_mode import SocketMode
from harness.fakes.slack_web_api import WebApi


class FakeSlack(Controls, Observations, SocketMode, WebApi):
    def __init__(
        self,
        *,
        port: int = 0,
        bot_token: str = "xoxb-1111-2222-fakebottoken",
        app_token: str = "xapp-1-A0FAKEAPP-3333-fakeapptoken",
        team_id: str = "T0FAKE",
        team: str = "Fake Workspace",
        team_domain: str = "fake-workspace",
        bot_user_id: str = "U0BOT",
        bot_name: str = "svc",
        bot_id: str = "B0BOT",
        app_id: str = "A0FAKEAPP",
        ack_timeout: float = 3.0,
        retry_delays: tuple[float, ...] = (0.0, 6.0, 30.0),
        close_after: float = 1.0,
        echo_own_messages: bool = True,
        subscriptions: Iterable[str] = ("message", "app_mention"),
    ) -> None:
        self.port = port
        self.bot_token = bot_token
        self.app_token = app_token
        self.valid_bot_tokens: set[str] = {bot_token}
        self.valid_app_tokens: set[str] = {app_token}
        self.team_id, self.team, self.team_domain = team_id, team, team_domain
        self.bot_user_id, self.bot_name, self.bot_id, self.app_id = (
            bot_user_id,
            bot_name,
            bot_id,
            app_id,
        )
        self.verification_token = "fake-verification-token"  # deprecated, but still sent
        self.ack_timeout = ack_timeout
        self.retry_delays = retry_delays
        self.close_after = close_after
        self.echo_own_messages = echo_own_messages
        self.subscriptions = set(subscriptions)

        self.loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._kick: asyncio.Event | None = None
        self._pump_task: asyncio.Task | None = None
        self._spawned: list[Any] = []  # concurrent futures of disconnect()/go_away() work
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._last_ts_us = 0

        self._calls: list[Call] = []
        self._failures: dict[str, list[tuple[str, int, dict[str, str]]]] = {}
        self._tickets: dict[str, bool] = {}  # ticket -> used
        self._connections: list[Connection] = []
        self._rr = 0
        self._refusing = False
        self._items: list[Item] = []
        self._items_by_key: dict[str, Item] = {}
        self._envelopes: dict[str, Envelope] = {}
        self._acks: list[Ack] = []
        self._socket_messages: list[tuple[int, str]] = []  # non-ack frames from the app
        self._channels: dict[str, dict[str, Any]] = {}
        self._users: dict[str, dict[str, Any]] = {}
        self._messages: dict[str, list[dict[str, Any]]] = {}
        self._updates: list[dict[str, Any]] = []
        self._ephemerals: list[dict[str, Any]] = []
        self._responses: list[dict[str, Any]] = []  # posts to response_url
        self._files: dict[str, dict[str, Any]] = {}
        self._file_bodies: dict[str, bytes] = {}
        self._download_failures: list[int] = []  # HTTP statuses the next downloads answer
        self._download_redirects: dict[str, str] = {}  # file id -> where its download redirects
        self._response_urls: dict[str, dict[str, Any]] = {}
        self.add_channel("C1", "general")
        self.add_user(bot_user_id, bot_name, is_bot=True)

    # --- addresses -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What AsyncWebClient takes as base_url."""
        return f"{self.url}/api/"

    # --- lifecycle -------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/socket", self._socket)
        app.router.add_get("/files-pri/{team_file}/{tail:.*}", self._download)
        app.router.add_post("/actions/{key}", self._respond)
        return app

    def start(self) -> FakeSlack:
        if not self.port:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.port = sock.getsockname()[1]
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("FakeSlack did not start")
        return self

    def _serve(self, ready: threading.Event) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self._kick = asyncio.Event()
        self._runner = web.AppRunner(self.app(), access_log=None)
        self.loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        self.loop.run_until_complete(site.start())
        self._pump_task = self.loop.create_task(self._pump())
        ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        if not (self.loop and self._runner):
            return

        async def shutdown() -> None:
            if self._pump_task:
                self._pump_task.cancel()
            for future in self._spawned:
                future.cancel()
            for conn in list(self._connections):
                if conn.closed_at is None and conn.transport is not None:
                    conn.transport.abort()
            await self._runner.cleanup()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread:
            self._thread.join(10)

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wake(self) -> None:
        """Let the delivery pump look again (from any thread)."""
        if self.loop is None or self._kick is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._kick.set()
        else:
            with contextlib.suppress(RuntimeError):  # loop already closed
                self.loop.call_soon_threadsafe(self._kick.set)
