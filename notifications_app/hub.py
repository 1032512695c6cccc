"""The notifier (contract §15): one per runtime. `notify()` records a notification with one
delivery row per target in one transaction, then delivers to each target in a task of its own —
a bounded number of attempts, each within a time limit, so a slow or failing target never delays
another. Each delivery ends `sent` or `failed` once; nothing is ever sent again: deliveries a
stopped svc left `pending` are marked `failed` at the next start, never retried.

Hooks anywhere in svc (a permission request, a turn's end, a pairing request) call
`run_soon()` through notifications_app.events: it returns at once, from the event loop's thread
or any other, and never raises into its caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from django.db import transaction
from django.utils import timezone

from notifications_app import apprise_target, channel_target, dashboard, webpush
from notifications_app.targets import Message, Permanent, Target, one_line

if TYPE_CHECKING:
    from notifications_app.models import Notification, PushSubscription
    from svcproject.runtime import Runtime

logger = logging.getLogger(__name__)

EVENTS = (
    "permission_requested",
    "turn_ended",
    "session_failed",
    "subagent_turn_completed",
    "pairing_requested",
)
ATTEMPTS = 3
ATTEMPT_TIMEOUT_S = 10.0
PREPARE_TIMEOUT_S = 30.0  # loading a target's library, once per delivery, before its attempts
BACKOFF_S = (1.0, 3.0)  # before the 2nd and the 3rd attempt
KEEP = 1000  # notifications kept; older ones (and their deliveries) are deleted at start
STOPPED = "svc stopped before delivering"


@dataclass(frozen=True)
class NotifySettings:
    events: frozenset[str]
    urls: Any  # as written: a bad entry fails its own delivery, it never stops svc


def read_settings() -> NotifySettings:
    """settings.json `notifications`, read leniently: svc's settings check does not know this
    section, so what is malformed here is logged (events) or becomes a failed delivery (urls)."""
    from svcproject import config

    section = config.current_settings().raw.get("notifications", {})
    if not isinstance(section, dict):
        logger.warning("settings.json notifications must be an object; using the defaults")
        section = {}
    events = section.get("events", list(EVENTS))
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        logger.warning("settings.json notifications.events must be a list of event names")
        events = list(EVENTS)
    if unknown := sorted(set(events) - set(EVENTS)):
        logger.warning("settings.json notifications.events: unknown %s", ", ".join(unknown))
    return NotifySettings(frozenset(events) & set(EVENTS), section.get("urls", []))


def link(session_id: str | None) -> str:
    """The session in the dashboard: on the tunnel's public URL while one is online."""
    from remote_app.public import share_base
    from svcproject import config

    base = share_base() or f"http://127.0.0.1:{config.svc_port()}"
    return f"{base}/#session={session_id}" if session_id else f"{base}/"


class Notifier:
    def __init__(self, runtime: Runtime) -> None:
        from notifications_app import events

        self.runtime = runtime
        self.attempts = ATTEMPTS
        self.attempt_timeout_s = ATTEMPT_TIMEOUT_S
        self.backoff_s: tuple[float, ...] = BACKOFF_S
        self._tasks: set[asyncio.Task] = set()
        self._running = False
        runtime.on_session_exit(events.session_exited)  # session_failed

    # --- start and stop ------------------------------------------------------------------------

    async def start(self) -> None:
        """What a previous run left pending failed with it (never re-sent); the VAPID key exists
        from here on, so browsers can subscribe."""
        if swept := await database_sync_to_async(_sweep)():
            logger.info("%d notification deliveries were cut off when svc stopped", swept)
        await asyncio.to_thread(webpush.vapid)
        self._running = True

    async def stop(self) -> None:
        self._running = False
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await database_sync_to_async(_sweep)()

    # --- from anywhere ---------------------------------------------------------------------------

    def run_soon(self, make: Callable[[], Awaitable[Any]]) -> None:
        """Run the coroutine `make()` on the runtime's loop, from its thread or another one;
        returns at once and never raises. Nothing runs before start or after stop."""
        try:
            loop = self.runtime.loop
            if loop is None or loop.is_closed() or not self._running:
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

    def _spawn(self, make: Callable[[], Awaitable[Any]]) -> None:
        if not self._running:
            return
        # A fresh context: the task must not keep (or act in) its caller's, a request's.
        task = asyncio.get_running_loop().create_task(
            self._guarded(make), context=contextvars.Context()
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _guarded(make: Callable[[], Awaitable[Any]]) -> None:
        try:
            await make()
        except Exception:
            logger.exception("a notification could not be made")

    async def wait_idle(self) -> None:
        """Until every delivery under way has ended (tests; a quiet shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # --- notify --------------------------------------------------------------------------------

    async def notify(
        self, event: str, *, session_id: str | None = None, agent: str = "", title: str,
        body: str, url: str = "",
    ) -> dict[str, Any] | None:  # fmt: skip
        """Record `event` and deliver it to every target; returns the notification (None when
        `notifications.events` leaves it out or svc is not running)."""
        if event not in EVENTS:
            raise ValueError(f"unknown notification event {event!r}; one of {', '.join(EVENTS)}")
        settings = await asyncio.to_thread(read_settings)
        if not self._running or event not in settings.events:
            return None
        fields = {
            "event": event, "session_id": session_id, "agent": agent[:64], "title": title[:200],
            "body": body, "url": url or link(session_id),
        }  # fmt: skip
        before = _unique(dashboard.targets() + channel_target.targets(self.runtime))
        after = apprise_target.targets(settings.urls, self.attempt_timeout_s)
        notification, subscriptions, rows = await database_sync_to_async(_record)(
            fields, [t.key for t in before], [t.key for t in after]
        )
        targets = before + webpush.targets(subscriptions, self.attempt_timeout_s) + after
        message = Message(id=str(notification.id), **fields)
        for target in targets:
            self._spawn(lambda t=target: self._deliver(rows[t.key], t, message))
        return notification.to_dict()

    async def _deliver(self, delivery_id: int, target: Target, message: Message) -> None:
        """One target: up to `attempts` tries, each within `attempt_timeout_s`, a pause between
        them; the row ends `sent` or `failed`."""
        attempt, error = 0, target.problem
        if not error and target.prepare is not None:
            try:
                async with asyncio.timeout(PREPARE_TIMEOUT_S):
                    await target.prepare()
            except Exception as exc:
                error = f"could not prepare: {one_line(exc)}"
        ready = not error and target.send is not None
        while ready and attempt < self.attempts:
            if attempt:
                await database_sync_to_async(_attempted)(delivery_id, attempt, error)
                await asyncio.sleep(self.backoff_s[min(attempt, len(self.backoff_s)) - 1])
            attempt += 1
            try:
                async with asyncio.timeout(self.attempt_timeout_s):
                    await target.send(message)
            except Permanent as exc:
                error = one_line(exc)
                break
            except TimeoutError:
                error = f"no answer within {self.attempt_timeout_s:g} s"
            except Exception as exc:
                error = one_line(exc)
            else:
                await self._finish(delivery_id, "sent", attempt, "")
                return
        logger.warning("notification %s to %s failed: %s", message.event, target.key, error)
        await self._finish(delivery_id, "failed", attempt, error or "not delivered")

    async def _finish(self, delivery_id: int, status: str, attempts: int, error: str) -> None:
        await database_sync_to_async(_ended)(delivery_id, status, attempts, error)
        with contextlib.suppress(Exception):  # the list shows the outcome; best effort
            await dashboard.publish()


def _unique(targets: list[Target]) -> list[Target]:
    """One target per key (two channels of one name would be one delivery)."""
    seen: dict[str, Target] = {}
    for target in targets:
        seen.setdefault(target.key, target)
    return list(seen.values())


# --- database (each in one transaction, through database_sync_to_async) ------------------------


@transaction.atomic
def _record(
    fields: dict[str, Any], before: list[str], after: list[str]
) -> tuple[Notification, list[PushSubscription], dict[str, int]]:
    from notifications_app.models import Delivery, Notification, PushSubscription

    subscriptions = list(PushSubscription.objects.all())
    keys = [*before, *(f"webpush:{s.pk}" for s in subscriptions), *after]
    notification = Notification.objects.create(**fields)
    Delivery.objects.bulk_create(Delivery(notification=notification, target=k) for k in keys)
    rows = dict(notification.deliveries.values_list("target", "pk"))
    return notification, subscriptions, rows


def _attempted(delivery_id: int, attempts: int, error: str) -> None:
    from notifications_app.models import Delivery

    Delivery.objects.filter(pk=delivery_id, status="pending").update(
        attempts=attempts, error=error, updated_at=timezone.now()
    )


def _ended(delivery_id: int, status: str, attempts: int, error: str) -> None:
    from notifications_app.models import Delivery

    Delivery.objects.filter(pk=delivery_id, status="pending").update(
        status=status, attempts=attempts, error=error, updated_at=timezone.now()
    )


@transaction.atomic
def _sweep() -> int:
    """Deliveries still pending belong to a run that ended: failed, never sent again. The
    oldest notifications beyond KEEP go."""
    from notifications_app.models import Delivery, Notification

    swept = Delivery.objects.filter(status="pending").update(
        status="failed", error=STOPPED, updated_at=timezone.now()
    )
    old = Notification.objects.order_by("-created_at").values_list("pk", flat=True)[KEEP:]
    if old_ids := list(old[:10_000]):
        Notification.objects.filter(pk__in=old_ids).delete()
    return swept
