"""Pairing's rules in-process (contract §13, §11): codes, one delivery of the cookie, expiry,
the wrong-code limit counted across surfaces, idle and rotated devices."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core import config
from remote_app import pairing
from remote_app.models import PairedDevice, PairingRequest

pytestmark = pytest.mark.django_db


def approved_device() -> tuple[str, PairedDevice]:
    started = pairing.pair_start("phone", "tunnel.example.test")
    pairing.pair_approve(started.code, "api")
    status, cookie, device = pairing.pair_status(started.pair_id)
    assert status == "approved" and cookie and device is not None
    return cookie, device


def test_a_code_is_six_digits_for_sixty_seconds_and_pending_ones_differ() -> None:
    codes = {pairing.pair_start("phone", "h").code for _ in range(30)}
    assert len(codes) == 30 and all(len(c) == 6 and c.isdigit() for c in codes)
    request = PairingRequest.objects.first()
    assert request is not None
    assert (request.expires_at - request.created_at).total_seconds() == pytest.approx(60, abs=1)


def test_the_cookie_is_delivered_once_and_only_its_hash_is_stored() -> None:
    started = pairing.pair_start("phone", "h")
    assert pairing.pair_status(started.pair_id)[:2] == ("pending", None)
    pairing.pair_approve(started.code, "cli")
    _, cookie, device = pairing.pair_status(started.pair_id)
    assert cookie and device is not None and device.cookie_hash == pairing.cookie_hash(cookie)
    assert cookie not in str(PairedDevice.objects.values_list())
    assert pairing.pair_status(started.pair_id)[:2] == ("approved", None)  # a replay: nothing
    assert pairing.device_for_cookie(cookie) == device


def test_an_expired_code_cannot_be_approved_and_reads_expired() -> None:
    started = pairing.pair_start("phone", "h")
    PairingRequest.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(pairing.WrongCode):
        pairing.pair_approve(started.code, "api")
    assert pairing.pair_status(started.pair_id)[0] == "expired"


def test_the_eleventh_attempt_in_a_minute_is_refused_whatever_its_surface() -> None:
    started = pairing.pair_start("phone", "h")
    wrong = f"{(int(started.code) + 1) % 10**6:06d}"
    for surface in ["api", "cli", "dashboard", "channel", "api"] * 2:
        with pytest.raises(pairing.WrongCode):
            pairing.pair_approve(wrong, surface)
    with pytest.raises(pairing.TooManyWrongCodes) as refused:
        pairing.pair_approve(started.code, "cli")
    assert refused.value.status == 429
    assert pairing.pair_status(started.pair_id)[0] == "pending"
    pairing.WrongPairingCode.objects.update(at=timezone.now() - timedelta(seconds=61))
    pairing.pair_approve(started.code, "cli")  # a minute later, the right code works


def test_a_device_idle_for_seven_days_ends() -> None:
    cookie, device = approved_device()
    PairedDevice.objects.update(last_seen=timezone.now() - timedelta(days=6, hours=23))
    assert pairing.device_for_cookie(cookie) is not None
    PairedDevice.objects.update(last_seen=timezone.now() - timedelta(days=7, minutes=1))
    assert pairing.device_for_cookie(cookie) is None
    assert not PairedDevice.objects.filter(pk=device.pk).exists()


def test_rotated_tokens_end_a_device_even_before_its_row_is_deleted() -> None:
    cookie, _ = approved_device()
    config.rotate_tokens()
    assert pairing.device_for_cookie(cookie) is None


def test_revoke_ends_a_device_and_unknown_cookies_open_nothing() -> None:
    cookie, device = approved_device()
    assert pairing.device_for_cookie("not-a-cookie") is None
    assert pairing.device_revoke(device.pk) and pairing.device_for_cookie(cookie) is None
    assert not pairing.device_revoke(device.pk)
