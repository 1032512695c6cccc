"""A fake Telegram Bot API server: a real aiohttp server on a loopback port that the unmodified
python-telegram-bot (or any other client) talks to over HTTP, for tests without a network.

It is written from the Bot API reference (https://core.telegram.org/bots/api) and from what the
open-source Bot API server (tdlib/telegram-bot-api, with tdlib underneath) does, independently of
svc's own channel code. What it reproduces:

* URLs `{api_base}/bot{token}/{method}` (method names case-insensitive, GET or POST, parameters in
  the query string, a JSON object, a urlencoded form or multipart form data; every parameter
  arrives as a string, and structured ones such as `reply_markup` as JSON text, exactly like
  the real server sees them) and file downloads at `{api_base}/file/bot{token}/{file_path}`;
* answers `{"ok": true, "result": ...}` / `{"ok": false, "error_code", "description"
  [, "parameters"]}` with the real descriptions (`Bad Request: chat not found`, `Bad Request:
  message is not modified: ...`, `Unauthorized`, `Conflict: terminated by other getUpdates
  request; ...`, `Not Found: method not found`, ...);
* the update queue of getUpdates: ids increase by one, `offset` confirms (forgets) older updates,
  a negative offset keeps only the last updates, long polling waits up to `timeout` (an integer,
  at most 50 s) and is answered as soon as an update arrives, a second concurrent getUpdates
  ends the first one with 409, `allowed_updates` is remembered and applies to updates created
  afterwards;
* messages as the server builds them: text cleaned (control characters become spaces, `\\r` is
  dropped) and trimmed of leading/trailing spaces and newlines, parse_mode HTML / MarkdownV2 /
  Markdown parsed into entities (with the real "can't parse entities" errors), offsets in
  UTF-16 code units, 1-4096 characters (Unicode code points) after parsing, captions up to
  1024, bot_command/url/mention/hashtag entities detected automatically;
* inline keyboards (only they are echoed in Message.reply_markup), callback_data of 1-64 bytes,
  edits that change nothing refused with "message is not modified", editMessageText without
  reply_markup removing the keyboard, replies (`reply_parameters` or `reply_to_message_id`),
  forum topics (`message_thread_id`).

Test controls (thread-safe, for sync or async test code): `send_text`, `send_photo`,
`send_document`, `tap` queue updates as if a user acted; `log`, `calls`, `sent`, `edits`,
`commands` show what the bot did; `wait_for` / `async_wait_for` poll a predicate; `fail_next`
makes the next calls of a method fail (e.g. 429 with retry_after); `go_away` / `come_back` close
and reopen the listening socket (dropping open connections) for reconnect tests.

Deliberate simplifications: one bot per server (every valid token is that bot); no rate limits
unless injected with `fail_next`; the server's anti-spam rules for getUpdates repeated with the
same offset (timeout stretched to 3 s within 3 s, limit 1 within 0.5 s) are off unless
`anti_spam=True`; the 3 s delay the server puts on repeated 409 answers is not reproduced;
entity merging/splitting of overlapping entities is not reproduced; smaller photo sizes carry
the original bytes (no re-encoding); inline-mode messages are not modelled.
Run standalone: `python -m harness.fakes.telegram_api --port 8081`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

from aiohttp import web

from harness.fakes.telegram_controls import Controls
from harness.fakes.telegram_files import Files
from harness.fakes.telegram_http import Http
from harness.fakes.telegram_methods import BotMethods
from harness.fakes.telegram_protocol import DEFAULT_TOKEN, _Failure, _File, _Stored, to_int
from harness.fakes.telegram_state import State


class FakeTelegram(Controls, Http, BotMethods, Files, State):
    """The fake Bot API server. `start()` it (or use it as a context manager), point the client at
    `api_base`, and drive it with the test controls."""

    def __init__(
        self,
        valid_tokens: Iterable[str] | None = None,
        *,
        port: int = 0,
        bot_first_name: str = "svc test",
        bot_username: str = "svc_test_bot",
        anti_spam: bool = False,
    ) -> None:
        self.valid_tokens = set(valid_tokens or {DEFAULT_TOKEN})
        first = sorted(self.valid_tokens)[0]
        bot_id = to_int(first.split(":", 1)[0]) or 123456
        self.bot_user: dict[str, Any] = {
            "id": bot_id,
            "is_bot": True,
            "first_name": bot_first_name,
            "username": bot_username,
        }
        self.port = port
        self.anti_spam = anti_spam
        self.loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.RLock()
        self._closing = False
        self._away = False
        # state (guarded by _lock)
        self._log: list[dict[str, Any]] = []
        self._edits: list[dict[str, Any]] = []
        self._users: dict[int, dict[str, Any]] = {}
        self._chats: dict[int, dict[str, Any]] = {}
        self._topics: dict[int, set[int]] = {}
        self._next_message_id: dict[int, int] = {}
        self._messages: dict[tuple[int, int], _Stored] = {}
        self._files: dict[str, _File] = {}
        self._paths: dict[str, str] = {}
        self._file_counter = itertools.count()
        self._queue: list[dict[str, Any]] = []  # pending updates, ascending update_id
        self._next_update_id = 100000001
        self._allowed: set[str] | None = None  # None: the default set
        self._callbacks: dict[str, dict[str, Any]] = {}
        self._callback_counter = itertools.count(5200000000000000001)
        self._commands: dict[tuple[str, str], list[dict[str, str]]] = {}
        self._failures: dict[str, list[_Failure]] = {}
        self._webhook_url = ""
        self._long_poll: asyncio.Future[str] | None = None
        self._last_poll: tuple[int, float] = (-1, 0.0)

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What python-telegram-bot takes as `base_url` (it appends the token)."""
        return f"{self.api_base}/bot"

    @property
    def base_file_url(self) -> str:
        return f"{self.api_base}/file/bot"

    @property
    def token(self) -> str:
        return sorted(self.valid_tokens)[0]

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle_method)
        app.router.add_route("GET", "/file/bot{token}/{path:.+}", self._handle_file)
        app.router.add_route("*", "/{tail:.*}", self._handle_other)
        return app

    def start(self) -> FakeTelegram:
        if not self.port:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.port = sock.getsockname()[1]
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="fake-telegram", daemon=True
        )
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("FakeTelegram did not start")
        return self

    def _serve(self, ready: threading.Event) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self._runner = web.AppRunner(
            self.app(), access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        self.loop.run_until_complete(self._runner.setup())
        self.loop.run_until_complete(self._open_site())
        ready.set()
        self.loop.run_forever()
        self.loop.close()

    async def _open_site(self) -> None:
        assert self._runner is not None
        self._site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await self._site.start()

    def stop(self) -> None:
        if not self.loop or not self._runner:
            return
        self._closing = True
        self._run(self._stop_async())
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread:
            self._thread.join(5)
        self._runner = None

    async def _stop_async(self) -> None:
        self._wake("closing")
        assert self._runner is not None
        await self._runner.cleanup()

    def __enter__(self) -> FakeTelegram:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, coro: Any, timeout: float = 10.0) -> Any:
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def go_away(self) -> None:
        """Close the listening socket and drop every open connection: clients get connection
        refused/reset until come_back()."""
        self._run(self._go_away())

    async def _go_away(self) -> None:
        if self._away:
            return
        self._away = True
        if self._site is not None:
            await self._site.stop()
            self._site = None
        server = self._runner.server if self._runner else None
        for conn in list(server.connections if server else []):
            conn.force_close()  # marks it only: an answer under way (a long poll) would go on
            if conn.transport is not None:
                conn.transport.abort()  # so the client sees a reset now, as when a server dies

    def come_back(self) -> None:
        """Listen again on the same port."""
        self._run(self._come_back())

    async def _come_back(self) -> None:
        if not self._away:
            return
        for _ in range(100):
            try:
                await self._open_site()
                break
            except OSError:
                await asyncio.sleep(0.05)
        else:
            raise RuntimeError(f"port {self.port} could not be reopened")
        self._away = False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--token", action="append", default=None)
    args = parser.parse_args()
    fake = FakeTelegram(args.token, port=args.port).start()
    print(f"fake Telegram Bot API on {fake.api_base} (token {fake.token})", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
