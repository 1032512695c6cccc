"""Handover codes issued and redeemed (contract §4; the codes' shape and the failure window
are sessions_app/handover.py).

Redeeming is one conditional UPDATE, so of any number of concurrent pickups exactly one wins.
Wrong, used and expired codes answer alike (nothing tells them apart). Only a code svc issued
is redeemed: each is sealed (sessions_app/seals.py), and a row written into the database is
refused as a wrong code.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from asgiref.sync import async_to_sync
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import DomainError, NotFound, TooManyRequests
from sessions_app import seals
from sessions_app.handover import (
    ALPHABET,
    CODE_LENGTH,
    CODE_SECONDS,
    FAILURES_PER_MINUTE,
    FailureWindow,
    new_code,
    normalise,
)
from sessions_app.models import HandoverCode, Session

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost

NOT_FOUND = "No live handover code like that: it is wrong, used or expired. Ask for a new one."
Clock = Callable[[], datetime]


@transaction.atomic
def handover_issue(*, session_id: str, clock: Clock = timezone.now) -> HandoverCode:
    """A fresh code for a session; expired codes are pruned on the way (one transaction)."""
    now = clock()
    session = Session.objects.filter(pk=session_id).first() if session_id else None
    if session is None:
        raise NotFound(f"no svc session {session_id!r} to hand over")
    HandoverCode.objects.filter(expires_at__lte=now, used_at__isnull=True).delete()
    for _ in range(20):  # 32⁴ ≈ 10⁶ codes: a clash with a live one is rare, never endless
        code = new_code()
        with transaction.atomic():
            if HandoverCode.objects.filter(code=code, used_at__isnull=True).exists():
                continue
            issued = HandoverCode(
                code=code,
                session=session,
                created_at=now,
                expires_at=now + timedelta(seconds=CODE_SECONDS),
            )
            issued.seal = seals.handover_seal(issued)
            issued.save(force_insert=True)
            return issued
    raise DomainError("could not draw a free handover code; try again", status=503)


def handover_offer(*, session_id: str, host: ProcessHost) -> dict[str, object]:
    """A fresh code for a session, shown in its chat, and how to use it: what the MCP tool
    `prepare_handover`, `POST /api/sessions/<id>/handover` and a chat's /handover answer."""
    code = handover_issue(session_id=session_id)
    handover_announce(code=code, host=host)  # after the code's transaction: no DB write
    return {
        "code": code.code,
        "expires_at": code.expires_at.isoformat(),
        "expires_in": CODE_SECONDS,
        "pickup": (
            f"Within {CODE_SECONDS} s, once: enter {code.code} in the svc dashboard's "
            f"Pick up box, or run `python manage.py pickup {code.code}`, or type "
            f"`/pickup {code.code}` in an svc chat."
        ),
    }


def handover_announce(*, code: HandoverCode, host: ProcessHost) -> None:
    """A code prepared for a hosted chat shows in that chat (the dashboard and every /ws/chat
    client see it), so the person watching the agent sees the code without asking for it."""
    chat = host.chat(str(code.session_id))
    if chat is None:
        return
    payload = {
        "code": code.code,
        "expires_at": code.expires_at.isoformat(),
        "expires_in": CODE_SECONDS,
    }
    async_to_sync(chat.emit)("handover", payload)


@transaction.atomic
def handover_redeem(*, code: str, failures: FailureWindow, clock: Clock = timezone.now) -> Session:
    """The code's session, once; the same NotFound for a wrong, used or expired code. `failures`
    counts the wrong ones (the runtime's window: more than the limit a minute → 429). One
    transaction: the winning UPDATE and the read of its session."""
    now = clock()
    if failures.locked(now):
        raise TooManyRequests(
            f"more than {FAILURES_PER_MINUTE} failed pickups in a minute; wait a minute"
        )
    wanted = normalise(code)
    won = 0
    if len(wanted) == CODE_LENGTH and set(wanted) <= set(ALPHABET):
        live = HandoverCode.objects.filter(code=wanted, used_at__isnull=True, expires_at__gt=now)
        # The code svc issued: a row written into the database with this code is passed over.
        pk = next((c.pk for c in live if seals.handover_sealed(c)), None)
        # One conditional UPDATE: concurrent pickups race in the database, and one row wins.
        if pk is not None:
            won = HandoverCode.objects.filter(pk=pk, used_at__isnull=True).update(used_at=now)
    if not won:
        failures.add(now)
        raise NotFound(NOT_FOUND)
    try:
        return HandoverCode.objects.select_related("session").get(pk=pk).session
    except (HandoverCode.DoesNotExist, IntegrityError) as exc:  # deleted meanwhile
        raise NotFound(NOT_FOUND) from exc
