"""The notifier (contract §15): one per runtime. `notify()` records a notification with one
delivery row per target in one transaction, then delivers to each target in a task of its own —
a few quick attempts, each within a time limit, so a slow or failing target never delays
another. Each delivery ends `sent` or `failed` once.

The delivery rows are its outbox (contract §17, "Nothing sent to svc is lost"): a target that
could not be reached (no connection, no answer, a 5xx, a chat channel reconnecting) keeps its
delivery `pending`, tried again later (`next_at`: 5 s doubling to 5 min) — by this run or, after a
restart, by the next — until it goes through or, 24 h after it was made, is `failed` with the
last error. A target that refused the message (a 4xx, a subscription gone, a URL Apprise does
not know) fails at once.

Hooks anywhere in svc (a permission request, a turn's end, a pairing request) call
`run_soon()` through notifications_app.events: it returns at once, from the event loop's thread
or any other, and never raises into its caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.utils import timezone

from notifications_app import (
    apprise_target,
    channel_target,
    dashboard,
    events,
    selectors,
    services,
    webpush,
)
from notifications_app.coalesce import Coalesce
from notifications_app.settings_section import EVENTS, NotifySettings, link, read_settings
from notifications_app.targets import Message, Permanent, Target, one_line

logger = logging.getLogger(__name__)

ATTEMPTS = 3
ATTEMPT_TIMEOUT_S = 10.0
PREPARE_TIMEOUT_S = 30.0  # loading a target's library, once per delivery, before its attempts
BACKOFF_S = (1.0, 3.0)  # before the 2nd and the 3rd attempt
RETRY_FIRST_S = 5.0  # then, while the target cannot be reached: one attempt after this …
RETRY_MAX_S = 300.0  # … doubling up to this, …
EXPIRE = timedelta(hours=24)  # … for at most this long after the notification (contract §17)
EARLY_LIMIT = 1000  # notifications heard while svc starts, made once the notifier runs
# Anyone who reaches the tunnel can start a pairing: at most one pairing notice per window.
PAIRING_WINDOW_S = 60.0


class Notifier:
    def __init__(
        self, channel_notifiers: Callable[[], list[Any]], online: Mapping[str, str]
    ) -> None:
        self.channel_notifiers = channel_notifiers  # the chat channels to notify (contract §14)
        self.online = online  # tunnel name → public URL: links go out on it (contract §13)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.attempts = ATTEMPTS
        self.attempt_timeout_s = ATTEMPT_TIMEOUT_S
        self.backoff_s: tuple[float, ...] = BACKOFF_S
        self.retry_first_s, self.retry_max_s = RETRY_FIRST_S, RETRY_MAX_S
        self.clock: Callable[[], datetime] = timezone.now  # tests move it (the 24 h)
        self._tasks: set[asyncio.Task] = set()
        self._delivering: set[int] = set()  # delivery ids with an attempt under way
        self._wake = asyncio.Event()
        self._retrying: asyncio.Task | None = None  # the loop that tries waiting deliveries
        self._running = False
        self._early: list[Callable[[], Awaitable[Any]]] | None = None  # heard before start
        self.pairing_notices = Coalesce(PAIRING_WINDOW_S)  # events.pairing_requested
        self.fleet: Any = None  # a fleet member's relay to the others (notifications_app.fleet)

    # --- start and stop ------------------------------------------------------------------------

    async def hear_early(self) -> None:
        """Hear of events from before the start is done, and notify them once it is: taking
        back the chats a holder kept (contract §17) replays what their agents did while svc
        was away — a turn's end, a permission request — before this notifier starts."""
        self.loop = asyncio.get_running_loop()
        self._early = []
        self._listen(True)

    async def start(self) -> None:
        """The VAPID key exists from here on, so browsers can subscribe; what a previous run
        left pending is tried again (the retry loop's first pass)."""
        self.loop = asyncio.get_running_loop()
        await database_sync_to_async(services.notifications_sweep)()
        await asyncio.to_thread(webpush.vapid)
        self._running = True
        self._listen(True)
        self._wake = asyncio.Event()
        self._retrying = self._spawn(self._retry_loop)
        early, self._early = self._early or [], None
        for make in early:
            self._spawn(make)

    async def stop(self) -> None:
        """Deliveries under way are cut off and stay pending: the next run tries them."""
        self._listen(False)
        self._running = False
        self._early = None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def wake(self) -> None:
        """Look at the waiting deliveries now (tests moved the clock)."""
        self._wake.set()

    def _listen(self, on: bool) -> None:
        """Hear of the events it reports (contract §15) while running: each receiver bound to
        this notifier, so a test's second runtime never reports through the first."""
        for signal, receiver in events.receivers():
            uid = f"notifier.{id(self)}.{receiver.__name__}"
            if on:
                signal.connect(functools.partial(receiver, self), weak=False, dispatch_uid=uid)
            else:
                signal.disconnect(dispatch_uid=uid)

    # --- from anywhere ---------------------------------------------------------------------------

    def run_soon(self, make: Callable[[], Awaitable[Any]]) -> None:
        """Run the coroutine `make()` on the runtime's loop, from its thread or another one;
        returns at once and never raises. Nothing runs before start or after stop."""
        try:
            loop = self.loop
            if loop is None or loop.is_closed() or not (self._running or self._early is not None):
                return
            try:
                here = asyncio.get_running_loop()
            except RuntimeError:
                here = None
            if here is loop:
                self._spawn(make)
            else:  # a fresh context: the caller's (asgiref's executor marks) must not follow
                loop.call_soon_threadsafe(self._spawn, make, context=contextvars.Context())
        except Exception:
            logger.exception("could not schedule a notification")

    def _spawn(self, make: Callable[[], Awaitable[Any]]) -> asyncio.Task | None:
        if not self._running:
            if self._early is not None and len(self._early) < EARLY_LIMIT:
                self._early.append(make)  # heard while starting: made once started
            return None
        # A fresh context: the task must not keep (or act in) its caller's, a request's.
        task = asyncio.get_running_loop().create_task(
            self._guarded(make), context=contextvars.Context()
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @staticmethod
    async def _guarded(make: Callable[[], Awaitable[Any]]) -> None:
        try:
            await make()
        except Exception:
            logger.exception("a notification could not be made")

    async def wait_idle(self) -> None:
        """Until every delivery under way has had its attempts (tests; a quiet shutdown): sent,
        failed, or waiting to be tried again."""
        while busy := [t for t in self._tasks if t is not self._retrying]:
            await asyncio.gather(*busy, return_exceptions=True)

    # --- notify --------------------------------------------------------------------------------

    async def notify(
        self,
        event: str,
        *,
        session_id: str | None = None,
        agent: str = "",
        title: str,
        body: str,
        url: str = "",
        origin: str = "",
    ) -> dict[str, Any] | None:
        """Record `event` and deliver it to every target; returns the notification (None when
        `notifications.events` leaves it out or svc is not running). `origin`: another fleet
        member's event, delivered here to this member's devices and chats (not to its Apprise
        URLs, which are settings a person copies from machine to machine: they would get it
        once per member)."""
        if event not in EVENTS:
            raise ValueError(f"unknown notification event {event!r}; one of {', '.join(EVENTS)}")
        settings = await asyncio.to_thread(read_settings)
        if not self._running or event not in settings.events:
            return None
        fields = {
            "event": event,
            "session_id": session_id,
            "agent": agent[:64],
            "title": (f"{title} (on {origin})" if origin else title)[:200],
            "body": body,
            "url": url or link(session_id, self.online),
            "origin": origin[:64],
        }
        before = _unique(dashboard.targets() + channel_target.targets(self.channel_notifiers))
        after = [] if origin else apprise_target.targets(settings.urls, self.attempt_timeout_s)
        notification, subscriptions, rows = await database_sync_to_async(
            services.notification_record
        )(fields=fields, before=[t.key for t in before], after=[t.key for t in after])
        targets = before + webpush.targets(subscriptions, self.attempt_timeout_s) + after
        fields.pop("origin")
        message = Message(id=str(notification.id), **fields)
        made = notification.created_at
        for target in targets:
            self._delivering.add(rows[target.key])
            self._spawn(lambda t=target: self._deliver(rows[t.key], t, message, made))
        if not origin and self.fleet is not None:
            self._spawn(lambda: self.fleet.tell(fields))
        return notification.to_dict()

    async def _deliver(
        self,
        delivery_id: int,
        target: Target,
        message: Message,
        made: datetime,
        done: int = 0,
        tries: int | None = None,
    ) -> None:
        """One target: up to `tries` attempts (the first time `attempts`, later one), each
        within `attempt_timeout_s`, a pause between them. The row ends `sent`, `failed`
        (refused; or 24 h after `made`), or stays `pending` with the time of its next try."""
        try:
            await self._attempts(delivery_id, target, message, made, done, tries or self.attempts)
        finally:
            self._delivering.discard(delivery_id)

    async def _attempts(
        self,
        delivery_id: int,
        target: Target,
        message: Message,
        made: datetime,
        done: int,
        tries: int,
    ) -> None:
        attempt, error, final = done, target.problem, bool(target.problem)
        if not error and target.prepare is not None:
            try:
                async with asyncio.timeout(PREPARE_TIMEOUT_S):
                    await target.prepare()
            except Exception as exc:
                error, final = f"could not prepare: {one_line(exc)}", True
        ready = not error and target.send is not None
        while ready and attempt < done + tries:
            if attempt > done:
                await database_sync_to_async(services.delivery_attempted)(
                    delivery_id=delivery_id, attempts=attempt, error=error
                )
                await asyncio.sleep(self.backoff_s[min(attempt - done, len(self.backoff_s)) - 1])
            attempt += 1
            try:
                async with asyncio.timeout(self.attempt_timeout_s):
                    await target.send(message)
            except Permanent as exc:
                error, final = one_line(exc), True
                break
            except TimeoutError:
                error = f"no answer within {self.attempt_timeout_s:g} s"
            except Exception as exc:
                error = one_line(exc)
            else:
                await self._finish(delivery_id, "sent", attempt, "")
                return
        error = error or "not delivered"
        now = self.clock()
        if not final and now - made < EXPIRE:
            wait = min(self.retry_first_s * 2 ** max(attempt - self.attempts, 0), self.retry_max_s)
            await database_sync_to_async(services.delivery_postpone)(
                delivery_id=delivery_id,
                attempts=attempt,
                error=error,
                next_at=now + timedelta(seconds=wait),
            )
            self.wake()  # the retry loop sees its time
            if attempt == self.attempts:  # once, when it starts to wait
                logger.info("notification %s to %s waits: %s", message.event, target.key, error)
                await self._published()
            return
        if not final:
            error = one_line(f"not delivered within 24 h: {error}")
        logger.warning("notification %s to %s failed: %s", message.event, target.key, error)
        await self._finish(delivery_id, "failed", attempt, error)

    async def _finish(self, delivery_id: int, status: str, attempts: int, error: str) -> None:
        await database_sync_to_async(services.delivery_end)(
            delivery_id=delivery_id, status=status, attempts=attempts, error=error
        )
        await self._published()

    @staticmethod
    async def _published() -> None:
        with contextlib.suppress(Exception):  # the list shows the outcome; best effort
            await dashboard.publish()

    # --- the waiting deliveries ----------------------------------------------------------------

    async def _retry_loop(self) -> None:
        """Try each waiting delivery when its time comes; the first pass after start, every
        delivery a previous run left pending."""
        first = True
        while self._running:
            self._wake.clear()
            try:
                soonest = await self._retry_due(first)
            except Exception:  # the database, for a moment: never the notifier's end
                logger.exception("could not read the waiting notification deliveries")
                soonest = 5.0
            first = False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), soonest)

    async def _retry_due(self, first: bool) -> float:
        now = self.clock()
        due, soonest = await database_sync_to_async(selectors.deliveries_due)(now, first)
        if due:
            settings = await asyncio.to_thread(read_settings)
            subscriptions = await database_sync_to_async(selectors.push_subscriptions_by_id)()
            for row in due:
                if row["id"] in self._delivering:
                    continue
                target = self._target(row["target"], settings, subscriptions)
                message = Message(**row["message"])
                self._delivering.add(row["id"])
                self._spawn(
                    lambda r=row, t=target, m=message: self._retry(r["id"], t, m, r["made"])
                )
        return 60.0 if soonest is None else max((soonest - now).total_seconds(), 0.05)

    async def _retry(self, delivery_id: int, target: Target, message: Message, made: Any) -> None:
        """One more attempt, unless the row went through or failed since it was read."""
        try:
            attempts = await database_sync_to_async(selectors.delivery_attempts_if_pending)(
                delivery_id
            )
        except BaseException:
            self._delivering.discard(delivery_id)
            raise
        if attempts is None:
            self._delivering.discard(delivery_id)
            return
        await self._deliver(delivery_id, target, message, made, done=attempts, tries=1)

    def _target(self, key: str, settings: NotifySettings, subscriptions: dict[int, Any]) -> Target:
        """The target a delivery row names, as it is now: a channel, a push subscription, an
        Apprise URL by its index — or, when it is no longer there, a target that fails at once
        saying so."""
        kind, _, rest = key.partition(":")
        found: list[Target] = []
        if kind == "dashboard":
            found = dashboard.targets()
        elif kind == "channel":
            found = channel_target.targets(self.channel_notifiers)
        elif kind == "webpush" and rest.isdigit() and int(rest) in subscriptions:
            found = webpush.targets([subscriptions[int(rest)]], self.attempt_timeout_s)
        elif kind == "apprise":
            found = apprise_target.targets(settings.urls, self.attempt_timeout_s)
        for target in found:
            if target.key == key:
                return target
        gone = {
            "channel": f"channel {rest} no longer has a notify_chat in settings.json",
            "webpush": "the browser's push subscription was removed",
            "apprise": f"notifications.urls[{rest}] is no longer in settings.json",
        }
        return Target(key, problem=gone.get(kind, f"no target {key!r}"))


def _unique(targets: list[Target]) -> list[Target]:
    """One target per key (two channels of one name would be one delivery)."""
    seen: dict[str, Target] = {}
    for target in targets:
        seen.setdefault(target.key, target)
    return list(seen.values())
