"""Signed fleet messages (§18 "Trust"): what verifies opens, and every kind of forgery, staleness,
replay and misdirection is refused with its reason; refusals are logged once a minute, never with
the secret or the body."""

from __future__ import annotations

import json
import logging

import pytest

from fleet_app.signing import (
    BROADCAST,
    NonceCache,
    RefusalLog,
    Refused,
    claimed_sender,
    open_sealed,
    seal,
    sign,
)

SECRET = "s" * 40
A, B, C = "a" * 32, "b" * 32, "c" * 32
NOW = 1_800_000_000.0


def opened(data: bytes, **kwargs):
    kwargs.setdefault("now", NOW)
    kwargs.setdefault("seen_nonces", NonceCache())
    return open_sealed(SECRET, data, **kwargs)


def refusal(data: bytes, **kwargs) -> str:
    with pytest.raises(Refused) as caught:
        opened(data, **kwargs)
    return caught.value.reason


def test_a_sealed_message_opens_with_what_was_sent() -> None:
    data = seal(SECRET, A, "list.changed", {"name": "sessions"}, to=B, call="c1", ts=NOW)
    envelope = opened(data, own_id=B)
    assert (envelope.sender, envelope.to, envelope.kind) == (A, B, "list.changed")
    assert envelope.body == {"name": "sessions"}
    assert envelope.call == "c1"
    assert envelope.ts == NOW


def test_a_str_secret_and_its_bytes_are_the_same_key() -> None:
    data = seal(SECRET.encode(), A, "k", {}, ts=NOW)
    assert opened(data, to=BROADCAST).sender == A


def test_a_changed_body_or_header_is_a_bad_signature() -> None:
    data = seal(SECRET, A, "http", {"path": "/api/sessions"}, to=B, ts=NOW)
    assert refusal(data.replace(b"/api/sessions", b"/api/settings"), own_id=B) == "bad signature"
    assert refusal(data.replace(A.encode(), C.encode()), own_id=B) == "bad signature"
    signature, _, payload = data.partition(b".")
    flipped = bytes([signature[0] ^ 1]) + signature[1:]
    assert refusal(flipped + b"." + payload, own_id=B) == "bad signature"


def test_a_message_sealed_with_another_secret_is_refused_and_names_its_claimed_sender() -> None:
    data = seal("w" * 40, C, "ping", {}, to=B, ts=NOW)
    with pytest.raises(Refused) as caught:
        opened(data, own_id=B)
    assert caught.value.reason == "bad signature"
    assert caught.value.sender == f"{C} (unverified)"
    assert not caught.value.verified


def test_a_message_more_than_30_s_from_now_either_way_is_stale() -> None:
    assert refusal(seal(SECRET, A, "k", {}, ts=NOW - 30.5), to=BROADCAST) == "stale"
    assert refusal(seal(SECRET, A, "k", {}, ts=NOW + 30.5), to=BROADCAST) == "stale"
    assert opened(seal(SECRET, A, "k", {}, ts=NOW - 29.5), to=BROADCAST).sender == A
    assert opened(seal(SECRET, A, "k", {}, ts=NOW + 29.5), to=BROADCAST).sender == A


def test_the_same_message_twice_is_a_replay() -> None:
    nonces = NonceCache()
    data = seal(SECRET, A, "http", {"method": "DELETE"}, to=B, ts=NOW)
    opened(data, own_id=B, seen_nonces=nonces)
    assert refusal(data, own_id=B, seen_nonces=nonces, now=NOW + 5) == "replayed"


def test_an_inbox_message_from_this_member_itself_is_refused() -> None:
    assert refusal(seal(SECRET, B, "k", {}, to=B, ts=NOW), own_id=B) == "own id"


def test_a_message_for_another_member_is_refused_and_does_not_spend_its_nonce() -> None:
    nonces = NonceCache()
    data = seal(SECRET, A, "http", {}, to=B, ts=NOW)
    # Captured on B's inbox and replayed into C's, or into the broadcast channel: refused.
    assert refusal(data, own_id=C, seen_nonces=nonces) == "wrong recipient"
    assert refusal(data, to=BROADCAST, seen_nonces=nonces) == "wrong recipient"
    assert opened(data, own_id=B, seen_nonces=nonces).sender == A


@pytest.mark.parametrize(
    "data",
    [b"", b"no dot here", b"abc.{}", b"." + b"x" * 10],
)
def test_garbage_is_malformed(data: bytes) -> None:
    assert refusal(data, to=BROADCAST) == "malformed"


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"[1, 2]",
        json.dumps(
            {"v": 2, "from": A, "to": "*", "ts": NOW, "nonce": "n", "kind": "k", "body": {}}
        ),
        json.dumps(
            {"v": 1, "from": A, "to": "*", "ts": "now", "nonce": "n", "kind": "k", "body": {}}
        ),
        json.dumps({"v": 1, "from": A, "to": "*", "ts": NOW, "nonce": "", "kind": "k", "body": {}}),
        json.dumps(
            {"v": 1, "from": A, "to": "*", "ts": NOW, "nonce": "n", "kind": "k", "body": []}
        ),
    ],
)
def test_a_well_signed_payload_of_the_wrong_shape_is_malformed(payload: bytes | str) -> None:
    raw = payload.encode() if isinstance(payload, str) else payload
    assert refusal(sign(SECRET, raw) + b"." + raw, to=BROADCAST) == "malformed"


def test_the_nonce_cache_forgets_after_60_s() -> None:
    cache = NonceCache()
    assert cache.check_and_add("n1", NOW, now=NOW)
    assert not cache.check_and_add("n1", NOW, now=NOW + 59)
    assert cache.check_and_add("n2", NOW + 61, now=NOW + 61)
    assert len(cache) == 1  # n1 is forgotten
    assert cache.check_and_add("n1", NOW + 61, now=NOW + 61)


def test_a_full_nonce_cache_stays_bounded_and_refuses_what_it_can_no_longer_vouch_for() -> None:
    cache = NonceCache(cap=3)
    for i in range(5):
        assert cache.check_and_add(f"n{i}", NOW + i, now=NOW + i)
    assert len(cache) == 3
    # n0 and n1 were forgotten: a message stamped no later than them might be their replay.
    assert not cache.check_and_add("n0", NOW, now=NOW + 5)
    assert not cache.check_and_add("fresh-but-old", NOW + 1, now=NOW + 5)
    assert cache.check_and_add("fresh", NOW + 5, now=NOW + 5)


def test_refusals_are_logged_once_per_sender_and_reason_per_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = RefusalLog(logging.getLogger("fleet_app.test"))
    caplog.set_level(logging.WARNING, logger="fleet_app.test")
    assert log.note(Refused("stale", A), "the inbox", now=0)
    assert not log.note(Refused("stale", A), "the inbox", now=10)
    assert not log.note(Refused("stale", A), "the inbox", now=59)
    assert log.note(Refused("replayed", A), "the inbox", now=20)  # another reason
    assert log.note(Refused("stale", B), "the inbox", now=20)  # another sender
    assert log.note(Refused("stale", A), "the inbox", now=61)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4
    assert lines[-1].endswith("stale (2 more like it in the last minute)")


def test_a_forger_inventing_senders_gets_one_line_a_minute_without_secret_or_body(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = RefusalLog(logging.getLogger("fleet_app.test"))
    caplog.set_level(logging.WARNING, logger="fleet_app.test")
    nonces = NonceCache()
    for i in range(20):
        data = seal("w" * 40, f"forger-{i}\nsvc: fake log line", "k", {"body": "BODY-MARK"}, ts=NOW)
        with pytest.raises(Refused) as caught:
            open_sealed(SECRET, data, now=NOW, seen_nonces=nonces, to=BROADCAST)
        log.note(caught.value, "the broadcast channel", now=float(i))
    assert len(caplog.records) == 1
    text = caplog.text
    assert "bad signature" in text
    assert "forger-0" in text and "\nsvc: fake" not in text  # no forged line break
    assert "BODY-MARK" not in text and SECRET not in text and "w" * 40 not in text


DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(
    "data",
    [DEEP, b"0" * 64 + b"." + DEEP, b"0" * 64 + b"." + b'{"from":' * 100_000 + b"}" * 100_000],
)
def test_nested_json_with_a_forged_signature_is_refused_not_raised(data: bytes) -> None:
    refused = refusal(data, to=BROADCAST)
    assert refused in ("malformed", "bad signature")


def test_a_well_signed_payload_nested_too_deep_is_malformed() -> None:
    assert refusal(sign(SECRET, DEEP) + b"." + DEEP, to=BROADCAST) == "malformed"


def test_a_huge_forged_message_is_not_parsed_for_its_claimed_sender() -> None:
    payload = b'{"from":"' + b"x" * (1 << 20) + b'"}'
    assert claimed_sender(payload) == "?"
    assert claimed_sender(b'{"from":"m-1"}') == "m-1 (unverified)"
