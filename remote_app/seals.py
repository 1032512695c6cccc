"""The seals of the rows that let a browser in through the remote listener (core/row_seal.py):
a pairing request (waiting, approved, its cookie handed out), an invite, a paired device.

A database writer who flips a waiting request to `approved`, resets `cookie_sent`, inserts an
invite of their own or a device whose `cookie_hash` is their cookie's, writes a row whose seal
does not verify: nothing is handed out, nobody is let in."""

from __future__ import annotations

from core import row_seal
from remote_app.models import PairedDevice, PairingInvite, PairingRequest

REQUEST, INVITE, DEVICE = "pairing request", "pairing invite", "paired device"


def _request_fields(request: PairingRequest) -> tuple:
    # The status and whether the cookie went are sealed: an approval, or a cookie not yet
    # handed out, is svc's own word only.
    return (
        request.pair_id,
        request.code,
        request.expires_at,
        request.status,
        request.cookie_sent,
        request.invited,
    )


def request_seal(request: PairingRequest) -> str:
    return row_seal.seal(REQUEST, *_request_fields(request))


def request_sealed(request: PairingRequest, what: str) -> bool:
    """Whether svc wrote this request as it is; if not, it is logged (once) with `what` it was
    not allowed to do."""
    if row_seal.sealed(REQUEST, request.seal, *_request_fields(request)):
        return True
    row_seal.refused(REQUEST, request.pair_id[:8], what)
    return False


def invite_seal(invite: PairingInvite) -> str:
    return row_seal.seal(INVITE, invite.secret_hash, invite.expires_at)


def invite_sealed(invite: PairingInvite) -> bool:
    if row_seal.sealed(INVITE, invite.seal, invite.secret_hash, invite.expires_at):
        return True
    row_seal.refused(INVITE, invite.secret_hash[:8], "it paired no browser")
    return False


def _device_fields(device: PairedDevice) -> tuple:
    # The fingerprint of the owner token it was paired under is sealed too: a rotation still
    # ends every device, and no database writer can carry one over.
    return (device.id, device.cookie_hash, device.page_key, device.token_fingerprint)


def device_seal(device: PairedDevice) -> str:
    return row_seal.seal(DEVICE, *_device_fields(device))


def device_sealed(device: PairedDevice, log: bool = True) -> bool:
    if row_seal.sealed(DEVICE, device.seal, *_device_fields(device)):
        return True
    if log:
        row_seal.refused(DEVICE, device.id, "its cookie opens nothing")
    return False
