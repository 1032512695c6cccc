"""Signed fleet messages (contract §18 "Trust"): every message between members carries an HMAC of
the fleet secret and a timestamp, and a receiver drops what is forged, stale, replayed or its own.

Plain standard library (no Django, no Redis; core.untrusted_json is stdlib too): the bus and the
byte relays both use it, and it is tested with bytes in and bytes out. Wire form:
`<hex hmac-sha256(secret, payload)>.<payload>`, payload the canonical JSON
`{"v":1,"from","to","ts","nonce","kind","body"[,"call"]}`. `to` is the recipient's machine id,
or "*" on the broadcast channel: it is signed so that a message captured on one member's inbox
cannot be replayed into another's (each member keeps its own nonce cache).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from core import untrusted_json

VERSION = 1
SKEW_S = 30.0  # §18: older (or newer) than 30 s → dropped
NONCE_TTL_S = 60.0  # twice the skew window: a nonce outlives every message that could carry it
NONCE_CAP = 100_000  # ≈ 1,600 messages/s for a minute before the oldest nonce is forgotten
BROADCAST = "*"
# A member's message is read whole only once its signature verified; one that does not verify is
# parsed for the log (who it claims to be) only this far: a forger's 16 MiB costs a hash, no parse.
MAX_MESSAGE = 64 << 20
MAX_CLAIM = 64 << 10


class Refused(Exception):
    """A message a receiver drops. `reason` is one of "bad signature", "stale", "replayed",
    "malformed", "own id", "wrong recipient"; `sender` is what the message claims (unverified
    when the signature is bad: `verified` False), for the log only."""

    def __init__(self, reason: str, sender: str = "?", *, verified: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sender = sender
        self.verified = verified


@dataclass(frozen=True)
class Envelope:
    sender: str  # "from" on the wire
    to: str  # a machine id, or BROADCAST
    ts: float
    nonce: str
    kind: str
    body: dict[str, Any] = field(default_factory=dict)
    call: str | None = None  # set on RPC requests and on their replies


def key_bytes(secret: bytes | str) -> bytes:
    return secret.encode() if isinstance(secret, str) else secret


def sign(secret: bytes | str, payload: bytes) -> bytes:
    """Hex HMAC-SHA256 of `payload` (ASCII bytes)."""
    return hmac.new(key_bytes(secret), payload, hashlib.sha256).hexdigest().encode()


def verify(secret: bytes | str, payload: bytes, signature: bytes) -> bool:
    # compare_digest: the time taken never tells a forger how many leading characters matched.
    return hmac.compare_digest(sign(secret, payload), signature)


def canonical(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=True).encode()


def seal(
    secret: bytes | str,
    machine_id: str,
    kind: str,
    body: dict[str, Any],
    *,
    to: str = BROADCAST,
    call: str | None = None,
    ts: float | None = None,
    nonce: str | None = None,
) -> bytes:
    """The signed wire bytes of one message from `machine_id`."""
    envelope: dict[str, Any] = {
        "v": VERSION,
        "from": machine_id,
        "to": to,
        "ts": time.time() if ts is None else ts,
        "nonce": nonce or secrets.token_hex(16),
        "kind": kind,
        "body": body,
    }
    if call is not None:
        envelope["call"] = call
    payload = canonical(envelope)
    return sign(secret, payload) + b"." + payload


class NonceCache:
    """Nonces seen in the last NONCE_TTL_S, at most `cap` of them. When a flood fills it, the
    oldest are forgotten and `floor` remembers the newest timestamp forgotten: a message no newer
    than that might be a replay the cache can no longer recognise, so it is refused too (strict
    rather than open: only a flood beyond the cap pays for it)."""

    def __init__(self, ttl: float = NONCE_TTL_S, cap: int = NONCE_CAP) -> None:
        self.ttl = ttl
        self.cap = cap
        self.floor = float("-inf")
        self._seen: OrderedDict[str, tuple[float, float]] = OrderedDict()  # nonce → (added, ts)

    def __len__(self) -> int:
        return len(self._seen)

    def check_and_add(self, nonce: str, ts: float, now: float) -> bool:
        """True when the nonce is fresh (and remembers it), False when it may be a replay."""
        while self._seen:
            oldest, (added, _) = next(iter(self._seen.items()))
            if now - added <= self.ttl:
                break
            del self._seen[oldest]
        if nonce in self._seen or ts <= self.floor:
            return False
        self._seen[nonce] = (now, ts)
        while len(self._seen) > self.cap:
            _, (_, forgotten_ts) = self._seen.popitem(last=False)
            self.floor = max(self.floor, forgotten_ts)
        return True


def open_sealed(
    secret: bytes | str,
    data: bytes,
    *,
    now: float,
    seen_nonces: NonceCache,
    own_id: str | None = None,
    to: str | None = None,
) -> Envelope:
    """The envelope of a message that verifies, or Refused. `own_id` set means the message came
    to this member's inbox: it must be addressed to it (`to`, which defaults to `own_id`) and not
    come from itself. On the broadcast channel pass `to=BROADCAST` and no `own_id` (a member hears
    its own broadcasts; the bus skips them quietly). The nonce is remembered only once everything
    else passed, so a refused message never blocks the genuine one."""
    signature, dot, payload = data.partition(b".")
    if not dot or len(signature) != 64:
        raise Refused("malformed", verified=False)
    if not verify(secret, payload, signature):
        raise Refused("bad signature", claimed_sender(payload), verified=False)
    envelope = _parse(payload)
    if abs(now - envelope.ts) > SKEW_S:
        raise Refused("stale", envelope.sender)
    expected_to = to if to is not None else own_id
    if own_id is not None and envelope.sender == own_id:
        raise Refused("own id", envelope.sender)
    if expected_to is not None and envelope.to != expected_to:
        raise Refused("wrong recipient", envelope.sender)
    if not seen_nonces.check_and_add(envelope.nonce, envelope.ts, now):
        raise Refused("replayed", envelope.sender)
    return envelope


def _parse(payload: bytes) -> Envelope:
    try:
        raw = untrusted_json.loads(payload, max_bytes=MAX_MESSAGE)
    except ValueError:  # not JSON, too large or too deeply nested
        raise Refused("malformed") from None
    if not isinstance(raw, dict) or raw.get("v") != VERSION:
        raise Refused("malformed")
    sender, to, ts, nonce = raw.get("from"), raw.get("to"), raw.get("ts"), raw.get("nonce")
    kind, body, call = raw.get("kind"), raw.get("body"), raw.get("call")
    if not (
        isinstance(sender, str)
        and isinstance(to, str)
        and isinstance(ts, int | float)
        and not isinstance(ts, bool)
        and isinstance(nonce, str)
        and nonce
        and isinstance(kind, str)
        and isinstance(body, dict)
        and (call is None or isinstance(call, str))
    ):
        raise Refused("malformed", sender if isinstance(sender, str) else "?")
    return Envelope(
        sender=sender, to=to, ts=float(ts), nonce=nonce, kind=kind, body=body, call=call
    )


def claimed_sender(payload: bytes) -> str:
    """Who a forged message says it is from, for the log: labelled unverified."""
    try:
        claimed = untrusted_json.loads(payload, max_bytes=MAX_CLAIM).get("from")
    except (ValueError, AttributeError):
        return "?"
    return f"{claimed} (unverified)" if isinstance(claimed, str) else "? (unverified)"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.:() -]")


class RefusalLog:
    """Logs a dropped message at WARNING once per (sender, reason) per `every_s`, counting the
    ones it kept quiet about: a forger or a member with the wrong secret cannot flood the log.
    Never logs the secret or the body: only who, why and where."""

    def __init__(self, logger: logging.Logger, every_s: float = 60.0, cap: int = 1024) -> None:
        self.logger = logger
        self.every_s = every_s
        self.cap = cap
        self._last: OrderedDict[tuple[str, str], tuple[float, int]] = OrderedDict()

    def note(self, refused: Refused, where: str, now: float | None = None) -> bool:
        """Record one refusal; True when it was logged."""
        now = time.monotonic() if now is None else now
        sender = _UNSAFE.sub("?", refused.sender)[:80]  # a forged "from" must not forge log lines
        # Unsigned messages share one key per reason: a forger varying "from" gets one line a
        # minute, not one per name it makes up.
        key = (sender if refused.verified else "(unverified)", refused.reason)
        last, quiet = self._last.get(key, (float("-inf"), 0))
        if now - last < self.every_s:
            self._last[key] = (last, quiet + 1)
            return False
        self._last[key] = (now, 0)
        self._last.move_to_end(key)
        while len(self._last) > self.cap:
            self._last.popitem(last=False)
        more = f" ({quiet} more like it in the last minute)" if quiet else ""
        self.logger.warning(
            "fleet: dropped a message on %s from %s: %s%s", where, sender, refused.reason, more
        )
        return True
