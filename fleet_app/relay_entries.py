"""One entry of a relay's stream (fleet_app.relay_streams), sealed and opened: fields `m` (JSON
meta: version, sender, relay, direction, seq, byte offset, kind, ts, and the other stream's
offset read so far when an ack rides along), `d` (the raw bytes) and `s` (hex HMAC of
`m + "\\n" + d` with the fleet secret). Plain functions, bytes in and bytes out."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from core import untrusted_json

from .signing import SKEW_S, Refused, claimed_sender, sign, verify

DATA = ("bytes", "text")
KINDS = (*DATA, "ack", "open", "close")
MAX_META = 4096  # a sealed meta is ~200 bytes


@dataclass(frozen=True)
class Stream:
    """Which stream an entry belongs to: the relay, its direction, and who writes it."""

    relay_id: str
    direction: str  # "down" (owner → viewer) | "up"
    machine_id: str


def seal(
    secret: bytes | str,
    stream: Stream,
    seq: int,
    kind: str,
    data: bytes,
    offset: int,
    ack: int | None = None,
) -> dict[bytes, bytes]:
    fields: dict[str, Any] = {"v": 1, "from": stream.machine_id, "relay": stream.relay_id}
    fields |= {"dir": stream.direction, "seq": seq, "off": offset, "kind": kind, "ts": time.time()}
    if ack is not None and kind != "ack":
        fields["ack"] = ack  # what the writer has read of the other stream
    meta = json.dumps(fields, separators=(",", ":")).encode()
    return {b"m": meta, b"d": data, b"s": sign(secret, meta + b"\n" + data)}


def opened(
    secret: bytes | str, stream: Stream, entry_id: bytes, fields: dict[bytes, bytes]
) -> tuple[dict[str, Any], bytes]:
    """The meta and bytes of an entry of `stream` (its writer is the other side). Refused when it
    is malformed, forged, meant for another relay or direction, or stale — measured against the
    entry's Redis id (the server's clock when it was added), so an entry that waited for a slow
    reader is not stale, a re-added one is."""
    meta_raw, data, signature = fields.get(b"m"), fields.get(b"d", b""), fields.get(b"s")
    if not meta_raw or not signature:
        raise Refused("malformed", verified=False)
    if not verify(secret, meta_raw + b"\n" + data, signature):
        raise Refused("bad signature", claimed_sender(meta_raw), verified=False)
    try:
        meta = untrusted_json.loads(meta_raw, max_bytes=MAX_META)
        sender, seq, off = meta["from"], meta["seq"], meta["off"]
        kind, ts = meta["kind"], float(meta["ts"])
    except (ValueError, KeyError, TypeError):
        raise Refused("malformed") from None
    if not (isinstance(seq, int) and isinstance(off, int) and kind in KINDS):
        raise Refused("malformed", str(sender))
    if meta.get("relay") != stream.relay_id or meta.get("dir") != stream.direction:
        raise Refused("wrong recipient", str(sender))
    added = int(entry_id.partition(b"-")[0]) / 1000
    if abs(added - ts) > SKEW_S:
        raise Refused("stale", str(sender))
    return meta, data
