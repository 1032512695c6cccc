"""Handover codes as services: alphabet, one use, expiry, and the daemon-wide failure limit."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from core.errors import NotFound, TooManyRequests
from sessions_app import handover
from sessions_app.models import Session
from sessions_app.services import handover as handing

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self) -> None:
        self.now = timezone.now()

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def failures() -> handover.FailureWindow:
    """The daemon's failed-pickup window (svc's parts hold one)."""
    return handover.FailureWindow()


@pytest.fixture
def session() -> Session:
    return Session.objects.create(agent="shell", workspace="/tmp", kind="terminal")


def test_codes_are_four_characters_of_the_unambiguous_alphabet(session: Session) -> None:
    codes = {handing.handover_issue(session_id=str(session.id)).code for _ in range(200)}
    assert all(re.fullmatch(r"[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{4}", c) for c in codes)
    assert len(codes) == 200  # unique among live codes


def test_a_code_works_once_and_in_any_case(
    session: Session, failures: handover.FailureWindow
) -> None:
    code = handing.handover_issue(session_id=str(session.id)).code
    assert handing.handover_redeem(failures=failures, code=f" {code.lower()} ").pk == session.pk
    with pytest.raises(NotFound) as again:
        handing.handover_redeem(failures=failures, code=code)
    assert str(again.value) == handing.NOT_FOUND


def test_an_expired_code_answers_like_a_wrong_one(
    session: Session, failures: handover.FailureWindow
) -> None:
    clock = Clock()
    code = handing.handover_issue(session_id=str(session.id), clock=clock).code
    clock.now += timedelta(seconds=handover.CODE_SECONDS)
    with pytest.raises(NotFound) as expired:
        handing.handover_redeem(failures=failures, code=code, clock=clock)
    with pytest.raises(NotFound) as wrong:
        handing.handover_redeem(failures=failures, code="ZZZZ", clock=clock)
    assert str(expired.value) == str(wrong.value) == handing.NOT_FOUND


def test_the_eleventh_failure_in_a_minute_is_429_for_everyone(
    session: Session, failures: handover.FailureWindow
) -> None:
    clock = Clock()
    code = handing.handover_issue(session_id=str(session.id), clock=clock).code
    for _ in range(handover.FAILURES_PER_MINUTE):
        with pytest.raises(NotFound):
            handing.handover_redeem(failures=failures, code="WXYZ", clock=clock)
    with pytest.raises(TooManyRequests):
        handing.handover_redeem(
            failures=failures, code=code, clock=clock
        )  # even the right code waits
    clock.now += timedelta(seconds=61)
    assert handing.handover_redeem(failures=failures, code=code, clock=clock).pk == session.pk


def test_issuing_needs_an_existing_session() -> None:
    with pytest.raises(NotFound):
        handing.handover_issue(session_id="00000000-0000-0000-0000-000000000000")
