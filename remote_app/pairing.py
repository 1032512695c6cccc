"""Pairing a browser for the remote listener (contract §13, limits §11).

A browser reaching svc through a tunnel asks for a 6-digit code, shows it, and waits; its person
enters the code on a trusted surface (the local dashboard, `manage.py pair`, `POST
/api/pairings/approve`, a channel's `/pair`). The first status call that sees the approval gets
the remote session cookie. Wrong codes count across every surface together.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from core import config
from core import live as lists
from core.errors import DomainError
from remote_app import device_names, seals, signals
from remote_app.models import PairedDevice, PairingInvite, PairingRequest, WrongPairingCode

CODE_SECONDS = 60
DELIVER_SECONDS = 60  # an approved request's cookie may still be fetched this long after expiry
WRONG_CODES_PER_MINUTE = 10  # more than this → 429 (contract §11)
IDLE_DAYS = 7
# Pairing pages are unauthenticated, so what strangers can start is bounded: at most this many
# requests wait at once (a new one drops the oldest), and at most this many start a minute.
# The owner always gets through with an invite made on the machine (docs/remote.md).
MAX_PENDING = 8
STARTS_PER_MINUTE = 30
INVITE_SECONDS = 600
TOUCH_EVERY_S = 60  # last_seen is written at most this often per device


class PairingError(DomainError):
    status, code = 400, "pairing"


class WrongCode(PairingError):
    status, code = 403, "wrong_code"


class TooManyWrongCodes(PairingError):
    status, code = 429, "too_many_wrong_codes"


class TooManyStarts(PairingError):
    status, code = 429, "too_many_pairing_requests"


class BadInvite(PairingError):
    status, code = 403, "bad_invite"


INVITE_HINT = (
    "on svc's own machine, make an invite (dashboard: Remote, Invite a phone; or `svc pair "
    "--invite`) and open its link here"
)


@dataclass(frozen=True)
class Started:
    pair_id: str
    code: str
    expires_in: int


def _broadcast() -> None:
    lists.broadcast_on_commit("pairings")


def cookie_hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _cookie_mac(ident: str) -> str:
    key = hmac.new(config.current_auth().owner_token.encode(), b"svc-remote-cookie", "sha256")
    return hmac.new(key.digest(), ident.encode(), "sha256").hexdigest()[:32]


def new_cookie() -> str:
    """A device's cookie: a random id and its MAC under a key derived from the owner token, so
    the remote listener can refuse a made-up cookie's request body before reading it, without
    the database (svcproject.admission). A cookie opens something only if it is signed AND its
    hash is in a paired device's sealed row (device_for_cookie): neither the database nor a
    cookie alone."""
    ident = secrets.token_urlsafe(24)
    return f"{ident}.{_cookie_mac(ident)}"


def cookie_signed(value: str) -> bool:
    ident, _, mac = (value or "").partition(".")
    return bool(ident and mac) and hmac.compare_digest(mac.encode(), _cookie_mac(ident).encode())


def token_fingerprint() -> str:
    """What a device remembers of the owner token in force when it paired (never the token):
    `rotate_tokens` in another process ends every device even before its rows are deleted."""
    owner = config.current_auth().owner_token
    return hmac.new(owner.encode(), b"svc-remote-device", "sha256").hexdigest()


def _expired_sweep() -> None:
    now = timezone.now()
    PairingRequest.objects.filter(status="pending", expires_at__lt=now).delete()
    PairingRequest.objects.filter(expires_at__lt=now - timedelta(seconds=DELIVER_SECONDS)).delete()
    WrongPairingCode.objects.filter(at__lt=now - timedelta(minutes=5)).delete()


def _new_code() -> str:
    pending = set(PairingRequest.objects.filter(status="pending").values_list("code", flat=True))
    while True:
        code = f"{secrets.randbelow(10**6):06d}"
        if code not in pending:  # two phones pairing at once each get their own code
            return code


@transaction.atomic
def pair_start(device: str, host: str, invite: str = "") -> Started:
    """A pairing request. With an invite made on the machine, it is approved at once and counts
    against no limit; without one, it waits for its code to be entered on a trusted surface."""
    _expired_sweep()
    if invite:
        return _start_invited(device, host, invite)
    now = timezone.now()
    recent = PairingRequest.objects.filter(created_at__gte=now - timedelta(minutes=1))
    if recent.filter(invited=False).count() >= STARTS_PER_MINUTE:
        raise TooManyStarts(f"too many pairing requests in the last minute; {INVITE_HINT}")
    _drop_oldest_waiting()
    handle = secrets.token_urlsafe(24)
    request = _sealed_create(
        PairingRequest(
            pair_id=cookie_hash(handle),
            code=_new_code(),
            device=device[:300],
            host=host[:300],
            expires_at=now + timedelta(seconds=CODE_SECONDS),
        )
    )
    _broadcast()
    transaction.on_commit(  # contract §15
        lambda: signals.pairing_requested.send_robust(
            sender=pair_start, device=request.device, host=request.host
        )
    )
    return Started(handle, request.code, CODE_SECONDS)


def _sealed_create(request: PairingRequest) -> PairingRequest:
    request.seal = seals.request_seal(request)
    request.save(force_insert=True)
    return request


def _drop_oldest_waiting() -> None:
    """Room for one more waiting request: the oldest ones go first (their pages say expired)."""
    waiting = PairingRequest.objects.filter(status="pending", invited=False).order_by("created_at")
    extra = waiting.count() - (MAX_PENDING - 1)
    if extra > 0:
        dropped = list(waiting.values_list("pk", flat=True)[:extra])
        PairingRequest.objects.filter(pk__in=dropped).update(status="expired")


def _start_invited(device: str, host: str, invite: str) -> Started:
    now = timezone.now()
    found = PairingInvite.objects.filter(
        secret_hash=cookie_hash(invite), used_at__isnull=True, expires_at__gte=now
    ).first()
    # An invite svc did not make (a row written into the database) pairs nobody.
    used = found is not None and seals.invite_sealed(found)
    used = used and PairingInvite.objects.filter(pk=found.pk, used_at__isnull=True).update(
        used_at=now
    )
    if not used:
        raise BadInvite(f"this invite link is wrong, used or expired; {INVITE_HINT}")
    handle = secrets.token_urlsafe(24)
    _sealed_create(
        PairingRequest(
            pair_id=cookie_hash(handle),
            code="",
            device=device[:300],
            host=host[:300],
            expires_at=now + timedelta(seconds=CODE_SECONDS),
            status="approved",
            approved_via="invite",
            invited=True,
        )
    )
    _broadcast()
    return Started(handle, "", CODE_SECONDS)


@dataclass(frozen=True)
class Invite:
    secret: str
    expires_in: int


@transaction.atomic
def invite_issue() -> Invite:
    """An invite to pair one browser, made on a trusted surface (main port, CLI): one use,
    INVITE_SECONDS. Its secret is shown once, in the link's fragment; only its hash is kept."""
    now = timezone.now()
    PairingInvite.objects.filter(expires_at__lt=now - timedelta(days=1)).delete()
    secret = secrets.token_urlsafe(24)
    invite = PairingInvite(
        secret_hash=cookie_hash(secret), expires_at=now + timedelta(seconds=INVITE_SECONDS)
    )
    invite.seal = seals.invite_seal(invite)
    invite.save(force_insert=True)
    return Invite(secret, INVITE_SECONDS)


def pair_status(pair_id: str) -> tuple[str, str | None, PairedDevice | None]:
    """(status, cookie value or None, device or None). The cookie comes once: to the first call
    that sees the approval, and only for an approval svc made (a sealed row)."""
    # Kept hashed, as cookies are: a copy of the database cannot ask for someone's cookie.
    request = PairingRequest.objects.filter(pk=cookie_hash(pair_id)).first() if pair_id else None
    now = timezone.now()
    if request is None:
        return "expired", None, None
    if request.status == "approved" and not seals.request_sealed(request, "no cookie handed out"):
        return ("expired" if request.expires_at < now else "pending"), None, None
    if request.status == "approved":
        if request.expires_at < now - timedelta(seconds=DELIVER_SECONDS):
            return "expired", None, None
        return ("approved", *_deliver(request))
    if request.status == "pending" and request.expires_at < now:
        return "expired", None, None
    return request.status, None, None


@transaction.atomic
def _deliver(request: PairingRequest) -> tuple[str | None, PairedDevice | None]:
    if request.cookie_sent:
        return None, None  # already delivered: a second tab or a replay gets nothing
    was = request.seal
    request.cookie_sent = True  # sealed as delivered: setting it back by SQL unseals the row
    taken = PairingRequest.objects.filter(pk=request.pk, cookie_sent=False, seal=was).update(
        cookie_sent=True, seal=seals.request_seal(request)
    )
    if not taken:
        return None, None  # delivered meanwhile, to another tab
    value = new_cookie()
    device = PairedDevice(
        id=secrets.token_hex(4),
        cookie_hash=cookie_hash(value),
        page_key=secrets.token_hex(32),
        device=request.device,
        host=request.host,
        token_fingerprint=token_fingerprint(),
        name=device_names.first_name(request.device),
    )
    device.seal = seals.device_seal(device)
    device.save(force_insert=True)
    PairingRequest.objects.filter(pk=request.pk).update(paired=device)
    _broadcast()
    return value, device


def wrong_codes_last_minute() -> int:
    since = timezone.now() - timedelta(minutes=1)
    return WrongPairingCode.objects.filter(at__gte=since).count()


def pair_approve(code: str, via: str) -> PairingRequest:
    """Approve the pending request showing `code`. More than WRONG_CODES_PER_MINUTE wrong codes
    in the last minute (all surfaces together) refuse every attempt, right ones included."""
    code = (code or "").strip()
    if wrong_codes_last_minute() >= WRONG_CODES_PER_MINUTE:
        raise TooManyWrongCodes(
            "too many wrong pairing codes in the last minute; wait a minute and try again"
        )
    request = _approve(code, via) if len(code) == 6 and code.isdigit() else None
    if request is None:
        # Outside the approving transaction: a refusal must not roll its own count back.
        WrongPairingCode.objects.create(surface=via[:32])
        raise WrongCode("no pairing request shows that code (wrong, used or expired)")
    _broadcast()
    return request


@transaction.atomic
def _approve(code: str, via: str) -> PairingRequest | None:
    """The waiting request svc made that shows `code`, approved and sealed so. A row written
    into the database with the same code (to be approved in the phone's place) is passed over."""
    waiting = PairingRequest.objects.select_for_update().filter(
        code=code, status="pending", expires_at__gte=timezone.now()
    )
    request = next(
        (r for r in waiting if seals.request_sealed(r, "its code approved nothing")), None
    )
    if request is not None:
        request.status, request.approved_via = "approved", via[:32]
        request.seal = seals.request_seal(request)
        request.save(update_fields=["status", "approved_via", "seal"])
    return request


def pair_deny(short_id: str) -> bool:
    """The owner refuses a pending request (the dashboard's Deny button)."""
    found = PairingRequest.objects.filter(pair_id__startswith=short_id, status="pending")
    denied = found.update(status="denied") if short_id else 0
    if denied:
        _broadcast()
    return bool(denied)


def device_for_cookie(value: str) -> PairedDevice | None:
    """The paired device this cookie opens, or None: not signed by svc, unknown, revoked, idle
    for IDLE_DAYS, paired under an owner token since rotated, or a row svc did not seal."""
    if not value or not cookie_signed(value):
        return None
    device = PairedDevice.objects.filter(cookie_hash=cookie_hash(value)).first()
    if device is None:
        return None
    now = timezone.now()
    fresh = hmac.compare_digest(device.token_fingerprint, token_fingerprint())
    if not fresh or device.last_seen < now - timedelta(days=IDLE_DAYS):
        device.delete()
        _broadcast()
        return None
    if not seals.device_sealed(device):
        return None
    if (now - device.last_seen).total_seconds() > TOUCH_EVERY_S:
        PairedDevice.objects.filter(pk=device.pk).update(last_seen=now)
    return device


def devices_list() -> list[dict]:
    """The paired devices: those svc paired (a row written into the database is none)."""
    return [d.to_dict() for d in PairedDevice.objects.all() if seals.device_sealed(d)]


def pending_list(with_code: bool = False) -> list[dict]:
    """Waiting requests; `with_code` only for svc's own machine (the main port)."""
    _expired_sweep()
    pending = PairingRequest.objects.filter(status="pending", expires_at__gte=timezone.now())
    rows = [r.to_dict() for r in pending]
    if with_code:
        for row, request in zip(rows, pending, strict=True):
            row["code"] = request.code  # "" for an invite: approved already
    return rows


def device_revoke(device_id: str) -> bool:
    deleted, _ = PairedDevice.objects.filter(pk=device_id).delete()
    if deleted:
        _broadcast()
    return bool(deleted)


def devices_end_all() -> int:
    """Every paired device ends (token rotation)."""
    deleted, _ = PairedDevice.objects.all().delete()
    PairingRequest.objects.all().delete()
    if deleted:
        _broadcast()
    return deleted


def page_key_matches(device: PairedDevice, given: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode(), device.page_key.encode())
