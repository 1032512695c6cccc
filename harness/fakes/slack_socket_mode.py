"""The fake Slack's Socket Mode: `apps.connections.open`, the WebSocket with its hello, envelopes
delivered and redelivered with Slack's retry rules, acks, disconnect and refresh."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
import uuid
from typing import Any

from aiohttp import WSMsgType, web

from harness.fakes.slack_records import INTERACTIVE, Ack, Connection, Envelope, Item


class SocketMode:
    """Part of FakeSlack (slack_api.py)."""

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
