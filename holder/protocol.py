"""Frames on the holder's socket: a 1-byte type, a 4-byte big-endian length, the payload.

Control messages are JSON (`J`); a session's stream carries its output as raw bytes (`O`), so a
terminal flood costs five bytes of framing per read, not an encoding.

An attach may ask for a lease (`"lease": true`, terminals only: holder/lease.py): the answer then
carries `lease` and three more descriptors after the PTY, and svc reads the PTY itself. Both sides
may lack it: a holder that does not know it answers without one (and svc reads frames), an svc
that does not ask never gets one.

Versions (the holder's answer to `hello` says which it speaks; sessions outlive svc restarts, so
an upgraded svc meets the holder an older one started, and the other way round):

- 1: no key. An svc of version 2 still uses such a holder (it takes its sessions back and starts
  new ones in it) after checking its folder and peer like any other (holder/reach.py), and says
  in its log that the holder predates the key; the next holder, once that one has exited (3 s
  after it holds nothing), is of version 2.
- 2 (issue 41): the first frame of every connection is a JSON request carrying the holder's key
  (holder/key.py); every frame is checked (holder/checks.py) and a bad one ends its connection
  only. An svc of version 1 sends no key, so a holder of version 2 refuses it with an error
  answer naming the key: refused cleanly, never half served. That svc then logs "no holder",
  runs its new sessions as its own children, and ends the sessions it could not take back
  `interrupted` while their processes run on in the holder: go back to an older svc only after
  `svc sessions --stop-all` (docs/holders.md).
"""

from __future__ import annotations

import json
import struct
from typing import Any

VERSION = 2
SPOKEN = (1, 2)  # the holders this svc uses
HEADER = struct.Struct(">cI")
MAX_FRAME = 16 << 20  # one ACP line may carry a whole file; larger input is split by the sender
MAX_FIRST = 64 << 10  # a connection's first frame (hello or attach), before the key is known

JSON = b"J"  # both ways: a request, its answer, or a notice ({"event": "exit", ...})
OUTPUT = b"O"  # holder → svc: the next bytes of the session's output, in order
GAP = b"G"  # holder → svc: output older than the scrollback was dropped ({"skipped": n})
EXIT = b"X"  # holder → svc: the process ended and all its output was sent ({"exit_code": n})
INPUT = b"I"  # svc → holder: bytes for the process's stdin / the PTY
RESIZE = b"R"  # svc → holder: {"cols", "rows"}
END_INPUT = b"E"  # svc → holder: close the process's stdin once the input before it is written
ACK = b"A"  # svc → holder: {"offset": n}: everything before n is svc's own now (pipes)
LEASE_END = b"L"  # holder → svc: the process ended: give the PTY back (holder/lease.py)
LEASE_BACK = b"B"  # svc → holder: svc no longer reads the PTY; its output goes on in frames


def frame(kind: bytes, payload: bytes) -> bytes:
    return HEADER.pack(kind, len(payload)) + payload


def json_frame(kind: bytes, message: dict[str, Any]) -> bytes:
    return frame(kind, json.dumps(message, separators=(",", ":")).encode())


def split_frames(buffer: bytearray, limit: int = MAX_FRAME) -> list[tuple[bytes, bytes]]:
    """Every whole frame at the front of `buffer`, removed from it; a partial one stays.
    ValueError for a frame announced larger than `limit`."""
    frames = []
    start = 0
    while len(buffer) - start >= HEADER.size:
        kind, size = HEADER.unpack_from(buffer, start)
        if size > limit:
            raise ValueError(f"frame of {size} bytes is larger than {limit}")
        end = start + HEADER.size + size
        if end > len(buffer):
            break
        frames.append((kind, bytes(buffer[start + HEADER.size : end])))
        start = end
    del buffer[:start]
    return frames


def first_frame(buffer: bytearray, limit: int = MAX_FIRST) -> tuple[bytes, bytes] | None:
    """The whole frame at the front of `buffer`, removed from it (None while it is partial):
    a connection's first, read alone, since what follows it is allowed only once it is known."""
    if len(buffer) < HEADER.size:
        return None
    kind, size = HEADER.unpack_from(buffer)
    if size > limit:
        raise ValueError(f"first frame of {size} bytes is larger than {limit}")
    if len(buffer) < HEADER.size + size:
        return None
    payload = bytes(buffer[HEADER.size : HEADER.size + size])
    del buffer[: HEADER.size + size]
    return kind, payload
