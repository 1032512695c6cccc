"""A channel's outbox (contract §17, "Nothing sent to svc is lost"): every message svc sends to a
chat, and every edit of one, is recorded first (`OutboxMessage`) and delivered from the record.

- **Recorded, then delivered.** `send` records a row and returns its id, which is what the
  conversation edits later (`edit`): the platform's own id is known only once it has the
  message. The conversation never waits for the platform, so an answer streams on while the
  platform is away.
- **Folded.** An edit changes the row's text; a row not yet delivered is sent once, with the
  last text. A row already shown becomes pending again and is delivered as an edit.
- **In order per chat.** A chat's rows go in the order they became pending (a new message when
  it was made, an edit of a shown one when it was edited), the next only once the one before
  is delivered or failed.
- **Retried while it may help.** A failure the platform says is passing (a connection refused,
  a timeout, a 5xx, a rate limit) leaves the row pending, tried again after a backoff (1 s
  doubling to 30 s, or the platform's retry-after) — and at once whenever the channel connects
  again. A refusal (chat not found, bot blocked, message gone) fails the row at once. A row
  pending 24 h is failed with its last error, and shown (`GET /api/channels`, the dashboard).
- **Driven by the channel's service.** `run(platform)` delivers while the supervised service is
  connected (channels_app/telegram.py, slack.py); rows wait in the database while it is not,
  and across a restart of svc.

A channel that stops (a restart, svc's orderly stop) lets the send in hand finish and records
it. A send whose answer is lost otherwise (svc killed after the platform took it, before the row
was marked) is sent again: that window is one request long, and a message shown twice is what
the platform's own clients do in that case too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from channels.db import database_sync_to_async

from channels_app import outbox_rows as rows
from channels_app import services
from channels_app.answer import EditClock
from channels_app.outbox_rows import ERROR_MAX, Due
from channels_app.platform import Buttons, Platform

logger = logging.getLogger(__name__)

EXPIRE = timedelta(hours=24)  # pending this long: failed (contract §17)
ATTEMPT_S = 30.0  # one send or edit, whatever the library's own timeouts
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 30.0

Now = Callable[[], datetime]
Retry = Callable[[], tuple[float, float]]  # (first, most) seconds between attempts


def retry_wait_s(attempts: int, first: float, most: float) -> float:
    """Before attempt number `attempts + 1`: first, doubling, at most `most`."""
    return min(first * 2 ** max(attempts - 1, 0), most)


def one_line(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    for secret in secrets:
        if secret:
            text = text.replace(secret, "<token>")
    return text if len(text) <= ERROR_MAX else text[: ERROR_MAX - 3] + "..."


# --- the outbox ------------------------------------------------------------------------------


class Outbox:
    """One channel's outbox. It stands where the platform stood for the conversation (the same
    `send` / `edit` and limits), and `run(platform)` delivers while the channel is connected."""

    def __init__(
        self,
        channel: str,
        limits: Platform,
        clock: EditClock,
        *,
        now: Now,
        retry: Retry,
        changed: Callable[[], Any] | None = None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.channel = channel
        self.name, self.max_len, self.edit_every_s = (
            limits.name,
            limits.max_len,
            limits.edit_every_s,
        )
        self.clock = clock  # marked at every delivery: edits keep the platform's rate
        self.now, self.retry = now, retry
        self.changed = changed or (lambda: None)  # the channels' live list re-sends
        self.secrets = secrets  # never written into an error (a Telegram URL holds the token)
        self.platform: Platform | None = None
        self._wake = asyncio.Event()
        self._draining: dict[str, asyncio.Task] = {}
        self._fresh = False  # just connected: what waits is tried at once
        self._stopping = False  # the channel lets go: each chat ends after the row in hand

    # --- what the conversation calls ---------------------------------------------------------

    async def send(self, chat: str, text: str, buttons: Buttons | None = None) -> str:
        """Record a message for `chat`; returns the id `edit` takes."""
        row_id, blocked = await database_sync_to_async(services.outbox_message_record)(
            channel=self.channel, chat=chat, text=text, buttons=buttons, now=self.now()
        )
        self.wake()
        if blocked:
            self.changed()
        return str(row_id)

    async def edit(
        self, chat: str, message_id: str, text: str, buttons: Buttons | None = None
    ) -> None:
        fold = database_sync_to_async(services.outbox_message_fold)
        if await fold(row_id=int(message_id), text=text, buttons=buttons, now=self.now()):
            self.wake()

    def wake(self) -> None:
        """Look at what is due now (a new row; or a test that moved the clock)."""
        self._wake.set()

    # --- delivery, while the channel is connected ---------------------------------------------

    async def run(self, platform: Platform) -> None:
        """Deliver what is due, chat by chat, until cancelled (the service stops or loses the
        platform); everything pending is tried at once first: the channel is reachable again."""
        self.platform, self._fresh = platform, True
        with contextlib.suppress(Exception):
            await database_sync_to_async(services.outbox_sweep)(
                channel=self.channel, now=self.now()
            )
        try:
            while True:
                self._wake.clear()
                try:
                    soonest = await self._start_due(platform)
                except Exception:  # the database, for a moment: never the channel's end
                    logger.exception("%s: could not read the outbox", self.channel)
                    soonest = 1.0
                self._fresh = False
                timeout = None if soonest is None else max(soonest, 0.05)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
        finally:
            self.platform = None
            await self._let_deliveries_end()

    async def _let_deliveries_end(self) -> None:
        """Wait for the rows in hand before letting go: cancelled between the platform taking a
        message and the row being marked sent, the restarted channel would send it again."""
        self._stopping = True
        try:
            tasks = list(self._draining.values())
            if tasks:
                _, late = await asyncio.wait(tasks, timeout=ATTEMPT_S)
                for task in late:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            self._draining.clear()
        finally:
            self._stopping = False

    async def _start_due(self, platform: Platform) -> float | None:
        """A delivery task for each chat whose next row is due; the seconds until the next one
        that is not (None: nothing waits)."""
        now, soonest = self.now(), None
        for head in await database_sync_to_async(rows.heads)(self.channel):
            if head.chat in self._draining:
                continue
            if self._fresh or head.next_at <= now or now - head.pending_since >= EXPIRE:
                task = asyncio.ensure_future(self._drain(platform, head.chat, self._fresh))
                self._draining[head.chat] = task
                task.add_done_callback(lambda _, chat=head.chat: self._drained(chat))
            else:
                wait = (head.next_at - now).total_seconds()
                soonest = wait if soonest is None else min(soonest, wait)
        return soonest

    def _drained(self, chat: str) -> None:
        self._draining.pop(chat, None)
        self.wake()  # rows added meanwhile, or the one it postponed: looked at again

    async def _drain(self, platform: Platform, chat: str, fresh: bool) -> None:
        """Deliver `chat`'s rows in order, until none is due."""
        try:
            await self._drain_rows(platform, chat, fresh)
        except asyncio.CancelledError:
            raise
        except Exception:  # the database, for a moment: the chat is looked at again soon
            logger.exception("%s: could not deliver to %s", self.channel, chat)
            await asyncio.sleep(1.0)

    async def _drain_rows(self, platform: Platform, chat: str, fresh: bool) -> None:
        while not self._stopping:
            row = await database_sync_to_async(rows.head)(self.channel, chat)
            if row is None:
                return
            now = self.now()
            if now - row.pending_since >= EXPIRE:
                error = f"not delivered within 24 h: {row.error or 'the platform did not answer'}"
                await database_sync_to_async(services.outbox_message_fail)(
                    row_id=row.id, attempts=row.attempts, error=error, now=now
                )
                logger.warning("%s: a message to %s failed: %s", self.channel, chat, error)
                self.changed()
                continue
            if row.next_at > now and not fresh:
                return  # postponed: the loop comes back for it
            fresh = False
            if row.message_id:  # an edit: at the platform's rate (§11), the newest text
                await asyncio.sleep(self.clock.wait_s(chat))
                if self._stopping:
                    return
                row = await database_sync_to_async(rows.head)(self.channel, chat) or row
            if not await self._deliver(platform, row):
                return

    async def _deliver(self, platform: Platform, row: Due) -> bool:
        """One attempt; False when the row was postponed (the chat waits)."""
        attempts = row.attempts + 1
        try:
            async with asyncio.timeout(ATTEMPT_S):
                if row.message_id:
                    await platform.edit(row.chat, row.message_id, row.text, row.buttons)
                    message_id = row.message_id
                else:
                    message_id = await platform.send(row.chat, row.text, row.buttons)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return await self._not_delivered(platform, row, attempts, exc)
        finally:
            # From the answer, not the request: the next edit of this chat comes at least
            # `edit_every_s` after the platform took this one.
            self.clock.mark(row.chat)
        if await database_sync_to_async(services.outbox_message_delivered)(
            row_id=row.id,
            version=row.version,
            message_id=message_id,
            attempts=attempts,
            now=self.now(),
        ):
            self.changed()
        return True

    async def _not_delivered(
        self, platform: Platform, row: Due, attempts: int, exc: Exception
    ) -> bool:
        now, error = self.now(), one_line(exc, self.secrets)
        hint = platform.retry_in(exc) if not isinstance(exc, TimeoutError) else 0.0
        if hint is None:  # refused: another attempt would be refused too
            await database_sync_to_async(services.outbox_message_fail)(
                row_id=row.id, attempts=attempts, error=error, now=now
            )
            logger.warning("%s: a message to %s was refused: %s", self.channel, row.chat, error)
            self.changed()
            return True
        first, most = self.retry()
        wait = max(hint, retry_wait_s(attempts, first, most))
        await database_sync_to_async(services.outbox_message_postpone)(
            row_id=row.id,
            attempts=attempts,
            error=error,
            next_at=now + timedelta(seconds=wait),
            now=now,
        )
        if attempts == 1:
            logger.info("%s: a message to %s waits: %s", self.channel, row.chat, error)
            self.changed()  # the chat waits now: the lists say so
        return False
