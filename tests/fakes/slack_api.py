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
`posted`, `updates`, `log`, `calls`, `acks`, `envelopes`, `assert_acked_once`, `settled`,
`wait_for` (from a thread) / `wait_for_async` (from the event loop the client runs on: a sync
wait there would stall the client under test).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

BOT_METHODS = {
    "auth.test",
    "chat.postMessage",
    "chat.update",
    "chat.delete",
    "chat.postEphemeral",
    "reactions.add",
    "reactions.remove",
    "conversations.info",
    "conversations.history",
    "conversations.replies",
    "users.info",
    "files.info",
}
APP_METHODS = {"apps.connections.open"}
INTERACTIVE = ("interactive", "slash_commands")
SIGN_IN_PAGE = (
    "<!DOCTYPE html><html><head><title>Slack</title></head>"
    "<body><h1>Sign in to Fake Workspace</h1></body></html>"
)


@dataclass
class Call:
    """One Web API call as the fake saw it."""

    method: str
    params: dict[str, Any]
    token: str | None
    at: float
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.response.get("ok"))

    @property
    def error(self) -> str | None:
        return self.response.get("error")


@dataclass
class Ack:
    envelope_id: str
    connection: int
    at: float
    payload: dict[str, Any] | None
    known: bool  # False: no envelope with that id was ever sent


@dataclass
class Envelope:
    """One delivery attempt of an item on one connection."""

    envelope_id: str
    type: str
    key: str  # the item: event_id for events, an interaction id otherwise
    attempt: int
    retry_reason: str
    connection: int
    sent_at: float
    body: dict[str, Any]
    acks: list[Ack] = field(default_factory=list)


@dataclass
class Item:
    """Something Slack wants the app to receive: an event or an interaction."""

    key: str
    type: str
    payload: dict[str, Any]
    accepts_response_payload: bool
    created_at: float
    attempts: int = 0  # attempts made so far, delivered or not
    due: float = 0.0
    state: str = "pending"  # pending | sent | acked | dropped (events) | failed (interactions)
    reason: str = ""  # why the next attempt is a retry
    envelopes: list[Envelope] = field(default_factory=list)


@dataclass
class Connection:
    id: int
    ticket: str
    opened_at: float
    ws: web.WebSocketResponse | None = field(default=None, repr=False)
    transport: Any = field(default=None, repr=False)
    ready: bool = False  # hello sent
    draining: bool = False  # sent `disconnect`
    dropped: bool = False  # go_away() is closing it
    closed_at: float | None = None

    @property
    def usable(self) -> bool:
        return self.ready and not self.dropped and self.closed_at is None


class FakeSlack:
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

    # --- directory -------------------------------------------------------------------------

    def add_channel(self, channel: str, name: str | None = None, **extra: Any) -> dict:
        with self._lock:
            if channel not in self._channels:
                is_im = channel.startswith("D")
                self._channels[channel] = {
                    "id": channel,
                    "name": name or channel.lower(),
                    "is_channel": channel.startswith("C"),
                    "is_group": channel.startswith("G"),
                    "is_im": is_im,
                    "is_mpim": False,
                    "is_private": not channel.startswith("C"),
                    "is_archived": False,
                    "is_general": name == "general",
                    "is_member": True,
                    "created": int(time.time()),
                    "creator": "U1",
                    "context_team_id": self.team_id,
                    **extra,
                }
                self._messages.setdefault(channel, [])
            return copy.deepcopy(self._channels[channel])

    def add_user(self, user: str, name: str | None = None, **extra: Any) -> dict:
        with self._lock:
            if user not in self._users:
                name = name or user.lower()
                self._users[user] = {
                    "id": user,
                    "team_id": self.team_id,
                    "name": name,
                    "real_name": name.title(),
                    "deleted": False,
                    "is_bot": False,
                    "is_admin": False,
                    "tz": "Europe/Paris",
                    "tz_offset": 3600,
                    "profile": {
                        "real_name": name.title(),
                        "display_name": name,
                        "email": f"{name}@example.com",
                        "team": self.team_id,
                    },
                    **extra,
                }
            return copy.deepcopy(self._users[user])

    def add_file(
        self,
        name: str,
        content: bytes,
        mimetype: str = "text/plain",
        user: str = "U1",
        title: str | None = None,
    ) -> dict:
        """A file as a user uploaded it; pass the result to post_message(files=[...])."""
        with self._lock:
            self.add_user(user)
            fid = f"F{next(self._ids):08d}"
            base = f"{self.url}/files-pri/{self.team_id}-{fid}"
            info = {
                "id": fid,
                "created": int(time.time()),
                "timestamp": int(time.time()),
                "name": name,
                "title": title or name,
                "mimetype": mimetype,
                "filetype": name.rsplit(".", 1)[-1] if "." in name else "binary",
                "pretty_type": mimetype,
                "user": user,
                "user_team": self.team_id,
                "editable": False,
                "size": len(content),
                "mode": "hosted",
                "is_external": False,
                "external_type": "",
                "is_public": True,
                "public_url_shared": False,
                "display_as_bot": False,
                "username": "",
                "url_private": f"{base}/{name}",
                "url_private_download": f"{base}/download/{name}",
                "permalink": f"https://{self.team_domain}.slack.com/files/{user}/{fid}/{name}",
                "channels": [],
                "groups": [],
                "ims": [],
            }
            self._files[fid] = info
            self._file_bodies[fid] = content
            return copy.deepcopy(info)

    # --- what a user does ------------------------------------------------------------------

    def post_message(
        self,
        user: str,
        text: str,
        channel: str = "C1",
        thread_ts: str | None = None,
        files: list[Any] | None = None,
    ) -> str:
        """A user posts in `channel` (or in the thread `thread_ts`); returns the message ts.
        Emits a `message` event, and an `app_mention` too when the text mentions the bot."""
        with self._lock:
            self.add_user(user)
            chan = self.add_channel(channel)
            ts = self._new_ts()
            msg: dict[str, Any] = {
                "type": "message",
                "user": user,
                "text": text,
                "ts": ts,
                "team": self.team_id,
                "client_msg_id": str(uuid.uuid4()),
                "blocks": [_rich_text(text)],
            }
            if thread_ts:
                msg["thread_ts"] = thread_ts
                parent = self._find(channel, thread_ts)
                if parent is not None:
                    msg["parent_user_id"] = parent.get("user")
                    parent.setdefault("thread_ts", thread_ts)
                    parent["reply_count"] = parent.get("reply_count", 0) + 1
            if files:
                msg["subtype"] = "file_share"
                msg["upload"] = False
                msg["display_as_bot"] = False
                msg["files"] = [self._file_for(f, user, channel) for f in files]
            self._messages[channel].append(msg)
            event = {**copy.deepcopy(msg), "channel": channel, "event_ts": ts}
            event["channel_type"] = _channel_type(chan)
            if "message" in self.subscriptions:
                self._enqueue_event(event)
            mentioned = f"<@{self.bot_user_id}>" in text
            if mentioned and "app_mention" in self.subscriptions and not chan["is_im"]:
                mention = {k: v for k, v in event.items() if k != "channel_type"}
                mention["type"] = "app_mention"
                mention.pop("subtype", None)
                self._enqueue_event(mention)
        self._wake()
        return ts

    def click(
        self,
        user: str,
        channel: str,
        message_ts: str,
        action_id: str,
        value: str | None = None,
    ) -> str:
        """A user clicks the element `action_id` of the bot's message `message_ts`: a
        `block_actions` interaction. `value` defaults to the element's own. Returns the
        interaction key (see `envelopes_for`)."""
        with self._lock:
            self.add_user(user)
            msg = self._find(channel, message_ts)
            if msg is None:
                raise KeyError(f"no message {message_ts} in {channel}")
            element, block_id = _element(msg.get("blocks") or [], action_id)
            if element is None:
                raise KeyError(f"message {message_ts} has no element with action_id {action_id}")
            now_ts = self._new_ts()
            action: dict[str, Any] = {
                "type": element.get("type", "button"),
                "action_id": action_id,
                "block_id": block_id,
                "action_ts": now_ts,
            }
            if "text" in element:
                action["text"] = element["text"]
            chosen = value if value is not None else element.get("value")
            if chosen is not None:
                action["value"] = chosen
            key = f"I{next(self._ids):08d}"
            payload = {
                "type": "block_actions",
                "user": self._user_ref(user),
                "api_app_id": self.app_id,
                "token": self.verification_token,
                "container": {
                    "type": "message",
                    "message_ts": message_ts,
                    "channel_id": channel,
                    "is_ephemeral": False,
                },
                "trigger_id": f"{next(self._ids)}.{secrets.token_hex(8)}",
                "team": {"id": self.team_id, "domain": self.team_domain},
                "enterprise": None,
                "is_enterprise_install": False,
                "channel": {"id": channel, "name": self._channels[channel]["name"]},
                "message": copy.deepcopy(msg),
                "state": {"values": {}},
                "response_url": self._response_url(channel, user, message_ts),
                "actions": [action],
            }
            self._enqueue(key, "interactive", payload, accepts_response_payload=False)
        self._wake()
        return key

    def slash(self, user: str, command: str, text: str = "", channel: str = "C1") -> str:
        """A user runs `/command text` in `channel`: a `slash_commands` envelope."""
        with self._lock:
            self.add_user(user)
            chan = self.add_channel(channel)
            key = f"I{next(self._ids):08d}"
            payload = {
                "token": self.verification_token,
                "team_id": self.team_id,
                "team_domain": self.team_domain,
                "channel_id": channel,
                "channel_name": chan["name"],
                "user_id": user,
                "user_name": self._users[user]["name"],
                "command": command,
                "text": text,
                "api_app_id": self.app_id,
                "is_enterprise_install": "false",
                "response_url": self._response_url(channel, user, None),
                "trigger_id": f"{next(self._ids)}.{secrets.token_hex(8)}",
            }
            self._enqueue(key, "slash_commands", payload, accepts_response_payload=True)
        self._wake()
        return key

    # --- connection controls ---------------------------------------------------------------

    def disconnect(self, reason: str = "refresh_requested", close_after: float | None = None):
        """Send `{"type": "disconnect", "reason": reason}` on every open socket, as Slack does
        before it recycles one; close those sockets `close_after` seconds later."""
        delay = self.close_after if close_after is None else close_after
        with self._lock:
            targets = [c for c in self._connections if c.usable and not c.draining]
            for conn in targets:
                conn.draining = True
        frame = json.dumps(
            {
                "type": "disconnect",
                "reason": reason,
                "debug_info": {"host": "applink-fake-1"},
            }
        )

        async def run() -> None:
            for conn in targets:
                with contextlib.suppress(Exception):
                    await conn.ws.send_str(frame)
            await asyncio.sleep(delay)
            for conn in targets:
                if conn.closed_at is None:
                    await self._close(conn, abrupt=False)

        self._spawn(run())

    def go_away(self, seconds: float | None = None, abrupt: bool = False) -> None:
        """Drop every socket (a close frame, or with `abrupt` a reset) and answer new ones 503
        until come_back() (or for `seconds`). The Web API keeps working."""
        with self._lock:
            self._refusing = True
            targets = [c for c in self._connections if c.closed_at is None]
            for conn in targets:
                conn.dropped = True

        async def run() -> None:
            for conn in targets:
                await self._close(conn, abrupt=abrupt)
            if seconds is not None:
                await asyncio.sleep(seconds)
                self.come_back()

        self._spawn(run())

    def come_back(self) -> None:
        with self._lock:
            self._refusing = False
        self._wake()

    def fail_next(
        self,
        method: str,
        error: str = "ratelimited",
        status: int | None = None,
        times: int = 1,
        retry_after: int = 1,
    ) -> None:
        """The next `times` calls of `method` answer `error` (`ratelimited`: HTTP 429 with
        Retry-After, as Slack; otherwise HTTP 200 unless `status`)."""
        code = status or (429 if error == "ratelimited" else 200)
        headers = {"Retry-After": str(retry_after)} if code == 429 else {}
        with self._lock:
            self._failures.setdefault(method, []).extend([(error, code, headers)] * times)

    def _spawn(self, coro: Any) -> None:
        if self.loop is None:
            coro.close()
            return
        self._spawned.append(asyncio.run_coroutine_threadsafe(coro, self.loop))

    async def _close(self, conn: Connection, abrupt: bool) -> None:
        if conn.closed_at is not None:
            return
        if abrupt and conn.transport is not None:
            conn.transport.abort()
            return
        if conn.ws is not None:
            with contextlib.suppress(Exception):
                await conn.ws.close(code=1001, message=b"going away")

    # --- observations ----------------------------------------------------------------------

    @property
    def log(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def calls(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if c.method == method]

    @property
    def acks(self) -> list[Ack]:
        with self._lock:
            return list(self._acks)

    @property
    def envelopes(self) -> list[Envelope]:
        """Every envelope sent, in order (a retry is a new envelope with the same key)."""
        with self._lock:
            return sorted(self._envelopes.values(), key=lambda e: e.sent_at)

    def envelopes_for(self, key: str) -> list[Envelope]:
        with self._lock:
            item = self._items_by_key.get(key)
            return list(item.envelopes) if item else []

    def item(self, key: str) -> Item | None:
        with self._lock:
            return self._items_by_key.get(key)

    def items(self, type: str | None = None) -> list[Item]:
        with self._lock:
            return [i for i in self._items if type is None or i.type == type]

    def event_key(self, ts: str, type: str = "message") -> str:
        """The event_id of the `type` event Slack emitted for the message `ts`."""
        with self._lock:
            for item in self._items:
                event = item.payload.get("event") or {}
                edit = event.get("subtype", "").startswith("message_")
                if event.get("type") == type and event.get("ts") == ts and not edit:
                    return item.key
        raise KeyError(f"no {type} event for {ts}")

    @property
    def socket_messages(self) -> list[tuple[int, str]]:
        """Frames the app sent that were not acks."""
        with self._lock:
            return list(self._socket_messages)

    @property
    def connections(self) -> list[Connection]:
        with self._lock:
            return list(self._connections)

    @property
    def open_connections(self) -> int:
        with self._lock:
            return sum(1 for c in self._connections if c.usable)

    def messages(self, channel: str = "C1") -> list[dict]:
        with self._lock:
            return copy.deepcopy(self._messages.get(channel, []))

    def posted(self, channel: str = "C1") -> list[dict]:
        """The bot's messages in `channel`, as they are now (after updates), in posting order."""
        with self._lock:
            return [
                copy.deepcopy(m)
                for m in self._messages.get(channel, [])
                if m.get("bot_id") == self.bot_id
            ]

    def updates(self, channel: str = "C1") -> list[dict]:
        """Every chat.update (and response_url replace) of a message in `channel`:
        {channel, ts, at (monotonic), text, blocks}."""
        with self._lock:
            return [copy.deepcopy(u) for u in self._updates if u["channel"] == channel]

    def ephemerals(self, channel: str | None = None) -> list[dict]:
        with self._lock:
            return [
                copy.deepcopy(e)
                for e in self._ephemerals
                if channel is None or e["channel"] == channel
            ]

    @property
    def responses(self) -> list[dict]:
        """Bodies posted to response_urls."""
        with self._lock:
            return copy.deepcopy(self._responses)

    def settled(self) -> bool:
        """Nothing is waiting for delivery or an ack."""
        with self._lock:
            return all(i.state not in ("pending", "sent") for i in self._items)

    def assert_acked_once(self) -> None:
        """Every item Slack had to deliver was acked exactly once over all its envelopes, no
        envelope twice, and no ack named an unknown envelope."""
        with self._lock:
            problems = []
            for item in self._items:
                count = sum(len(e.acks) for e in item.envelopes)
                if count != 1:
                    event = item.payload.get("event") or item.payload
                    problems.append(
                        f"{item.type} {item.key} ({event.get('type')}) acked {count} times, "
                        f"{len(item.envelopes)} deliveries, state {item.state}"
                    )
            problems += [
                f"ack for unknown envelope {a.envelope_id}" for a in self._acks if not a.known
            ]
        assert not problems, "; ".join(problems)

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Poll `predicate` until truthy, from a thread that is not running the client's
        event loop; returns its value."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "FakeSlack.wait_for would block the running event loop (and the client on "
                "it): use `await fake.wait_for_async(...)`"
            )
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
            time.sleep(0.01)

    async def wait_for_async(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
            await asyncio.sleep(0.01)

    # --- Socket Mode -----------------------------------------------------------------------

    def _enqueue_event(self, event: dict[str, Any]) -> None:
        key = f"Ev{next(self._ids):08d}"
        payload = {
            "token": self.verification_token,
            "team_id": self.team_id,
            "context_team_id": self.team_id,
            "api_app_id": self.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": key,
            "event_time": int(time.time()),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": self.team_id,
                    "user_id": self.bot_user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
            "event_context": f"4-{secrets.token_urlsafe(24)}",
        }
        self._enqueue(key, "events_api", payload, accepts_response_payload=False)

    def _enqueue(self, key: str, type: str, payload: dict, accepts_response_payload: bool):
        now = time.monotonic()
        item = Item(key, type, payload, accepts_response_payload, created_at=now, due=now)
        self._items.append(item)
        self._items_by_key[key] = item

    def _plan(self, now: float) -> tuple[list[tuple[Connection, Envelope]], float | None]:
        """Under the lock: what to send now, and when to look again."""
        sends: list[tuple[Connection, Envelope]] = []
        wake: list[float] = []
        usable = [c for c in self._connections if c.usable]
        targets = [c for c in usable if not c.draining] or usable
        by_id = {c.id: c for c in self._connections}
        for item in self._items:
            if item.state == "sent":
                env = item.envelopes[-1]
                conn = by_id[env.connection]
                if conn.closed_at is not None:
                    self._failed(item, now, "connection_failed")
                elif now - env.sent_at >= self.ack_timeout:
                    self._failed(item, now, "timeout")
                else:
                    wake.append(env.sent_at + self.ack_timeout)
            if item.state != "pending":
                continue
            if item.type in INTERACTIVE:
                if now - item.created_at >= self.ack_timeout:
                    item.state = "failed"  # the user's click timed out
                    continue
                wake.append(item.created_at + self.ack_timeout)
            if now < item.due:
                wake.append(item.due)
                continue
            if not targets:
                if item.type == "events_api":
                    self._failed(item, now, "connection_failed")
                    if item.state == "pending":
                        wake.append(item.due)
                continue
            conn = targets[self._rr % len(targets)]
            self._rr += 1
            sends.append((conn, self._envelope(item, conn, now)))
            wake.append(now + self.ack_timeout)
        return sends, min(wake) if wake else None

    def _envelope(self, item: Item, conn: Connection, now: float) -> Envelope:
        envelope_id = str(uuid.uuid4())
        body: dict[str, Any] = {
            "envelope_id": envelope_id,
            "payload": item.payload,
            "type": item.type,
            "accepts_response_payload": item.accepts_response_payload,
        }
        if item.type == "events_api":
            body["retry_attempt"] = item.attempts
            body["retry_reason"] = item.reason if item.attempts else ""
        env = Envelope(
            envelope_id,
            item.type,
            item.key,
            item.attempts,
            body.get("retry_reason", ""),
            conn.id,
            now,
            body,
        )
        item.attempts += 1
        item.state = "sent"
        item.envelopes.append(env)
        self._envelopes[envelope_id] = env
        return env

    def _failed(self, item: Item, now: float, reason: str) -> None:
        """An attempt failed: events are retried on Slack's schedule, interactions are not."""
        if item.state == "pending":
            item.attempts += 1  # an attempt that found no socket
        if item.type in INTERACTIVE:
            item.state = "failed"
            return
        retries_done = item.attempts - 1
        if retries_done >= len(self.retry_delays):
            item.state = "dropped"
            return
        item.state = "pending"
        item.reason = reason
        item.due = now + self.retry_delays[retries_done]

    async def _pump(self) -> None:
        assert self._kick is not None
        while True:
            now = time.monotonic()
            with self._lock:
                sends, wake = self._plan(now)
            for conn, env in sends:
                with contextlib.suppress(Exception):  # a dying socket: the retry logic copes
                    await conn.ws.send_str(json.dumps(env.body))
            timeout = None if wake is None else max(0.0, wake - time.monotonic()) + 0.001
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kick.wait(), timeout)
            self._kick.clear()

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        with self._lock:
            refusing = self._refusing
            known = ticket in self._tickets
            used = self._tickets.get(ticket, False)
            if not refusing and known and not used:
                self._tickets[ticket] = True
        if refusing:
            return web.json_response({"ok": False, "error": "service_unavailable"}, status=503)
        if not known or used:  # tickets are single use
            return web.json_response({"ok": False, "error": "invalid_ticket"}, status=401)
        ws = web.WebSocketResponse(autoping=True, timeout=2.0)
        await ws.prepare(request)
        with self._lock:
            conn = Connection(next(self._ids), ticket, time.monotonic(), ws, request.transport)
            self._connections.append(conn)
            live = sum(1 for c in self._connections if c.closed_at is None)
        try:
            hello = {
                "type": "hello",
                "num_connections": live,
                "debug_info": {
                    "host": "applink-fake-1",
                    "build_number": 1,
                    "approximate_connection_time": 18060,
                },
                "connection_info": {"app_id": self.app_id},
            }
            await ws.send_str(json.dumps(hello))
            with self._lock:
                conn.ready = True
            self._wake()
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self._received(conn, msg.data)
        finally:
            with self._lock:
                conn.closed_at = time.monotonic()
            self._wake()
        return ws

    def _received(self, conn: Connection, data: str) -> None:
        try:
            frame = json.loads(data)
        except ValueError:
            frame = None
        with self._lock:
            if not isinstance(frame, dict) or "envelope_id" not in frame:
                self._socket_messages.append((conn.id, data))
                return
            env = self._envelopes.get(frame["envelope_id"])
            ack = Ack(
                frame["envelope_id"],
                conn.id,
                time.monotonic(),
                frame.get("payload"),
                known=env is not None,
            )
            self._acks.append(ack)
            if env is None:
                return
            env.acks.append(ack)
            item = self._items_by_key[env.key]
            if item.state in ("sent", "pending"):  # a late ack also cancels a due retry
                item.state = "acked"
        self._wake()

    # --- Web API ---------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        raw = await request.read()
        if raw:
            if request.content_type == "application/json":
                with contextlib.suppress(ValueError):
                    body = json.loads(raw)
                    if isinstance(body, dict):
                        params.update(body)
            else:
                params.update(parse_qsl(raw.decode(errors="replace"), keep_blank_values=True))
        auth = request.headers.get("Authorization", "")
        header_token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        param_token = params.pop("token", None)
        token = header_token or param_token
        if method in APP_METHODS and not header_token:
            token = None  # Slack: the app-level token must come in the Authorization header
        status, headers, response = self._answer(method, token, params)
        with self._lock:
            self._calls.append(Call(method, params, token, time.monotonic(), status, response))
        return web.json_response(response, status=status, headers=headers)

    def _answer(self, method: str, token: str | None, params: dict) -> tuple[int, dict, dict]:
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None or method not in BOT_METHODS | APP_METHODS:
            return 404, {}, {"ok": False, "error": "unknown_method", "req_method": method}
        if not token:
            return 200, {}, {"ok": False, "error": "not_authed"}
        is_bot, is_app = token in self.valid_bot_tokens, token in self.valid_app_tokens
        if not (is_bot or is_app):
            return 200, {}, {"ok": False, "error": "invalid_auth"}
        if (method in APP_METHODS and not is_app) or (method in BOT_METHODS and not is_bot):
            return 200, {}, {"ok": False, "error": "not_allowed_token_type"}
        with self._lock:
            queued = self._failures.get(method)
            if queued:
                error, status, headers = queued.pop(0)
                return status, headers, {"ok": False, "error": error}
            response = handler(params)
        self._wake()
        return 200, {}, response

    def _m_auth_test(self, p: dict) -> dict:
        return {
            "ok": True,
            "url": f"https://{self.team_domain}.slack.com/",
            "team": self.team,
            "user": self.bot_name,
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _m_apps_connections_open(self, p: dict) -> dict:
        ticket = secrets.token_hex(16)
        self._tickets[ticket] = False
        return {
            "ok": True,
            "url": f"ws://127.0.0.1:{self.port}/socket?ticket={ticket}&app_id={self.app_id}",
        }

    def _m_chat_postMessage(self, p: dict) -> dict:
        ref = p.get("channel")
        if isinstance(ref, str) and ref in self._users and ref != self.bot_user_id:
            p = {**p, "channel": self.add_channel("D" + ref.removeprefix("U"))["id"]}  # the DM
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        blocks, err = _blocks(p.get("blocks"))
        if err:
            return _err(err)
        text = p.get("text")
        if not text and not blocks and not p.get("attachments"):
            return _err("no_text")
        ts = self._new_ts()
        msg: dict[str, Any] = {
            "user": self.bot_user_id,
            "type": "message",
            "ts": ts,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            "text": text or "",
            "team": self.team_id,
            "bot_profile": {
                "id": self.bot_id,
                "app_id": self.app_id,
                "name": self.bot_name,
                "deleted": False,
                "team_id": self.team_id,
            },
        }
        if blocks:
            msg["blocks"] = blocks
        thread_ts = p.get("thread_ts")
        if thread_ts:
            msg["thread_ts"] = thread_ts
            parent = self._find(channel, thread_ts)
            if parent is not None:
                msg["parent_user_id"] = parent.get("user")
                parent.setdefault("thread_ts", thread_ts)
                parent["reply_count"] = parent.get("reply_count", 0) + 1
        self._messages[channel].append(msg)
        self._echo({**copy.deepcopy(msg), "channel": channel, "event_ts": ts}, channel)
        return {"ok": True, "channel": channel, "ts": ts, "message": copy.deepcopy(msg)}

    def _m_chat_update(self, p: dict) -> dict:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        msg = self._find(channel, p.get("ts") or "")
        if msg is None:
            return _err("message_not_found")
        if msg.get("bot_id") != self.bot_id:
            return _err("cant_update_message")
        blocks, err = _blocks(p.get("blocks"))
        if err:
            return _err(err)
        if p.get("text") is None and blocks is None and not p.get("attachments"):
            return _err("no_text")
        self._apply_update(channel, msg, p.get("text"), blocks)
        return {
            "ok": True,
            "channel": channel,
            "ts": msg["ts"],
            "text": msg["text"],
            "message": copy.deepcopy(msg),
        }

    def _apply_update(self, channel: str, msg: dict, text: str | None, blocks: Any) -> None:
        previous = copy.deepcopy(msg)
        if text is not None:
            msg["text"] = text
        if blocks is not None:
            if blocks:
                msg["blocks"] = blocks
            else:
                msg.pop("blocks", None)
        edit_ts = self._new_ts()
        msg["edited"] = {"user": self.bot_user_id, "ts": edit_ts}
        self._updates.append(
            {
                "channel": channel,
                "ts": msg["ts"],
                "at": time.monotonic(),
                "text": msg.get("text"),
                "blocks": copy.deepcopy(msg.get("blocks")),
            }
        )
        event = {
            "type": "message",
            "subtype": "message_changed",
            "hidden": True,
            "message": copy.deepcopy(msg),
            "previous_message": previous,
            "channel": channel,
            "ts": edit_ts,
            "event_ts": edit_ts,
        }
        self._echo(event, channel)

    def _m_chat_delete(self, p: dict) -> dict:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        msg = self._find(channel, p.get("ts") or "")
        if msg is None:
            return _err("message_not_found")
        if msg.get("bot_id") != self.bot_id:
            return _err("cant_delete_message")
        self._messages[channel].remove(msg)
        return {"ok": True, "channel": channel, "ts": msg["ts"]}

    def _m_chat_postEphemeral(self, p: dict) -> dict:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        user = p.get("user")
        if user not in self._users:
            return _err("user_not_found")
        blocks, err = _blocks(p.get("blocks"))
        if err:
            return _err(err)
        if not p.get("text") and not blocks and not p.get("attachments"):
            return _err("no_text")
        ts = self._new_ts()
        self._ephemerals.append(
            {
                "channel": channel,
                "user": user,
                "ts": ts,
                "text": p.get("text") or "",
                "blocks": blocks,
                "thread_ts": p.get("thread_ts"),
            }
        )
        return {"ok": True, "message_ts": ts}

    def _m_reactions_add(self, p: dict) -> dict:
        msg, err = self._reaction_target(p)
        if err:
            return _err(err)
        name = p["name"]
        reactions = msg.setdefault("reactions", [])
        for r in reactions:
            if r["name"] == name:
                if self.bot_user_id in r["users"]:
                    return _err("already_reacted")
                r["users"].append(self.bot_user_id)
                r["count"] += 1
                return {"ok": True}
        reactions.append({"name": name, "users": [self.bot_user_id], "count": 1})
        return {"ok": True}

    def _m_reactions_remove(self, p: dict) -> dict:
        msg, err = self._reaction_target(p)
        if err:
            return _err(err)
        for r in msg.get("reactions", []):
            if r["name"] == p["name"] and self.bot_user_id in r["users"]:
                r["users"].remove(self.bot_user_id)
                r["count"] -= 1
                msg["reactions"] = [x for x in msg["reactions"] if x["count"]]
                return {"ok": True}
        return _err("no_reaction")

    def _reaction_target(self, p: dict) -> tuple[dict, str]:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return {}, "channel_not_found"
        if not p.get("name"):
            return {}, "invalid_name"
        msg = self._find(channel, p.get("timestamp") or "")
        if msg is None:
            return {}, "message_not_found"
        return msg, ""

    def _m_conversations_info(self, p: dict) -> dict:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        return {"ok": True, "channel": copy.deepcopy(self._channels[channel])}

    def _m_conversations_history(self, p: dict) -> dict:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        top = [m for m in self._messages[channel] if m.get("thread_ts", m["ts"]) == m["ts"]]
        limit = int(p.get("limit") or 100)
        return _page(list(reversed(top))[:limit])

    def _m_conversations_replies(self, p: dict) -> dict:
        channel = self._channel_id(p.get("channel"))
        if channel is None:
            return _err("channel_not_found")
        ts = p.get("ts") or ""
        if self._find(channel, ts) is None:
            return _err("thread_not_found")
        thread = [m for m in self._messages[channel] if m["ts"] == ts or m.get("thread_ts") == ts]
        return _page(thread)

    def _m_users_info(self, p: dict) -> dict:
        user = self._users.get(p.get("user") or "")
        if user is None:
            return _err("user_not_found")
        return {"ok": True, "user": copy.deepcopy(user)}

    def _m_files_info(self, p: dict) -> dict:
        info = self._files.get(p.get("file") or "")
        if info is None:
            return _err("file_not_found")
        return {
            "ok": True,
            "file": copy.deepcopy(info),
            "comments": [],
            "response_metadata": {"next_cursor": ""},
        }

    async def _download(self, request: web.Request) -> web.Response:
        fid = request.match_info["team_file"].split("-", 1)[-1]
        auth = request.headers.get("Authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        with self._lock:
            self._calls.append(
                Call("files-pri", {"file": fid, "path": request.path}, token, time.monotonic())
            )
            info = self._files.get(fid)
            content = self._file_bodies.get(fid)
        if token not in self.valid_bot_tokens:  # Slack answers its sign-in page, with a 200
            return web.Response(text=SIGN_IN_PAGE, content_type="text/html")
        if info is None or content is None:
            return web.Response(status=404, text="Not Found")
        headers = {"Content-Disposition": f'attachment; filename="{info["name"]}"'}
        return web.Response(body=content, content_type=info["mimetype"], headers=headers)

    async def _respond(self, request: web.Request) -> web.Response:
        """A response_url: replace_original / delete_original / in_channel / ephemeral."""
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=400, text="invalid_payload")
        with self._lock:
            target = self._response_urls.get(request.match_info["key"])
            if target is None:
                return web.Response(status=404, text="expired_url")
            self._responses.append({**copy.deepcopy(body), "_target": dict(target)})
            channel, ts = target["channel"], target["message_ts"]
            msg = self._find(channel, ts) if ts else None
            blocks, _ = _blocks(body.get("blocks"))
            if body.get("delete_original") and msg is not None:
                self._messages[channel].remove(msg)
            elif body.get("replace_original") and msg is not None:
                self._apply_update(channel, msg, body.get("text"), blocks)
            elif body.get("response_type") == "in_channel":
                self._m_chat_postMessage({**body, "channel": channel})
            else:
                self._ephemerals.append(
                    {
                        "channel": channel,
                        "user": target["user"],
                        "ts": self._new_ts(),
                        "text": body.get("text") or "",
                        "blocks": blocks,
                        "thread_ts": body.get("thread_ts"),
                    }
                )
        self._wake()
        return web.json_response({"ok": True})

    # --- helpers ---------------------------------------------------------------------------

    def _echo(self, event: dict, channel: str) -> None:
        """Slack sends an app the message events of its own posts too (bolt skips them)."""
        if self.echo_own_messages and "message" in self.subscriptions:
            event["channel_type"] = _channel_type(self._channels[channel])
            self._enqueue_event(event)

    def _new_ts(self) -> str:
        us = max(int(time.time() * 1_000_000), self._last_ts_us + 1)
        self._last_ts_us = us
        return f"{us // 1_000_000}.{us % 1_000_000:06d}"

    def _find(self, channel: str, ts: str) -> dict | None:
        for msg in self._messages.get(channel, []):
            if msg["ts"] == ts:
                return msg
        return None

    def _channel_id(self, ref: Any) -> str | None:
        if not isinstance(ref, str) or not ref:
            return None
        if ref in self._channels:
            return ref
        name = ref.lstrip("#")
        for cid, info in self._channels.items():
            if info["name"] == name:
                return cid
        return None

    def _user_ref(self, user: str) -> dict:
        name = self._users[user]["name"]
        return {"id": user, "username": name, "name": name, "team_id": self.team_id}

    def _response_url(self, channel: str, user: str, message_ts: str | None) -> str:
        key = secrets.token_hex(12)
        self._response_urls[key] = {"channel": channel, "user": user, "message_ts": message_ts}
        return f"{self.url}/actions/{key}"

    def _file_for(self, ref: Any, user: str, channel: str) -> dict:
        if isinstance(ref, dict):
            info = self._files[ref["id"]]
        else:
            name, content, *rest = ref
            mimetype = rest[0] if rest else "text/plain"
            info = self._files[self.add_file(name, content, mimetype, user)["id"]]
        info["channels"] = sorted(set(info["channels"]) | {channel})
        return copy.deepcopy(info)


def _err(error: str) -> dict:
    return {"ok": False, "error": error}


def _page(messages: list[dict]) -> dict:
    return {
        "ok": True,
        "messages": copy.deepcopy(messages),
        "has_more": False,
        "response_metadata": {"next_cursor": ""},
    }


def _blocks(value: Any) -> tuple[list | None, str]:
    """Blocks arrive as a list (JSON body) or a JSON string (form body)."""
    if value is None:
        return None, ""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except ValueError:
            return None, "invalid_blocks_format"
    if not isinstance(value, list) or not all(isinstance(b, dict) and "type" in b for b in value):
        return None, "invalid_blocks"
    return value, ""


def _rich_text(text: str) -> dict:
    return {
        "type": "rich_text",
        "block_id": secrets.token_urlsafe(4),
        "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
    }


def _channel_type(chan: dict) -> str:
    if chan["is_im"]:
        return "im"
    if chan["is_mpim"]:
        return "mpim"
    return "group" if chan["is_private"] else "channel"


def _element(blocks: list[dict], action_id: str) -> tuple[dict | None, str]:
    for block in blocks:
        candidates = list(block.get("elements") or [])
        if block.get("accessory"):
            candidates.append(block["accessory"])
        for element in candidates:
            if isinstance(element, dict) and element.get("action_id") == action_id:
                return element, block.get("block_id") or secrets.token_urlsafe(4)
    return None, ""
