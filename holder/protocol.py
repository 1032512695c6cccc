"""Frames on the holder's socket: a 1-byte type, a 4-byte big-endian length, the payload.

Control messages are JSON (`J`); a session's stream carries its output as raw bytes (`O`), so a
terminal flood costs five bytes of framing per read, not an encoding.

An attach may ask for a lease (`"lease": true`, terminals only: holder/lease.py): the answer then
carries `lease` and three more descriptors after the PTY, and svc reads the PTY itself. Both sides
may lack it: a holder that does not know it answers without one (and svc reads frames), an svc
that does not ask never gets one. So the version stays 1.
"""

from __future__ import annotations

import json
import struct
from typing import Any

VERSION = 1
HEADER = struct.Struct(">cI")
MAX_FRAME = 16 << 20  # one ACP line may carry a whole file; larger input is split by the sender

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


def split_frames(buffer: bytearray) -> list[tuple[bytes, bytes]]:
    """Every whole frame at the front of `buffer`, removed from it; a partial one stays."""
    frames = []
    start = 0
    while len(buffer) - start >= HEADER.size:
        kind, size = HEADER.unpack_from(buffer, start)
        if size > MAX_FRAME:
            raise ValueError(f"frame of {size} bytes is larger than {MAX_FRAME}")
        end = start + HEADER.size + size
        if end > len(buffer):
            break
        frames.append((kind, bytes(buffer[start + HEADER.size : end])))
        start = end
    del buffer[:start]
    return frames
