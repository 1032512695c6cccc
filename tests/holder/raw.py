"""A raw client of the holder's socket, outside svc's code: what a local process (an agent, a
sandboxed one, a script of the user's) can send it. Standard library only, so it also runs as a
program of its own (`python raw.py <holder dir> <marker> [--key]`, under `unshare -n` say): it
tries every way to make the holder spawn `touch <marker>` and prints each answer as a JSON line.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from pathlib import Path
from typing import Any

HEADER = struct.Struct(">cI")


def connect(directory: Path, timeout: float = 10) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.connect(os.fspath(directory / "holder.sock"))
    return sock


def send(sock: socket.socket, kind: bytes, payload: bytes) -> None:
    sock.sendall(HEADER.pack(kind, len(payload)) + payload)


def send_json(sock: socket.socket, message: Any, kind: bytes = b"J") -> None:
    send(sock, kind, json.dumps(message).encode())


def read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        try:
            chunk = sock.recv(size - len(data))
        except (ConnectionResetError, TimeoutError):
            return None
        if not chunk:
            return None
        data += chunk
    return data


def read_frame(sock: socket.socket) -> tuple[bytes, bytes] | None:
    """The next frame, or None once the holder closed the connection."""
    header = read_exactly(sock, HEADER.size)
    if header is None:
        return None
    kind, size = HEADER.unpack(header)
    payload = read_exactly(sock, size)
    return None if payload is None else (kind, payload)


def answer(sock: socket.socket) -> dict[str, Any] | None:
    """The next JSON answer (notices skipped), or None once the holder closed the connection."""
    while (frame := read_frame(sock)) is not None:
        message = json.loads(frame[1]) if frame[0] == b"J" else {}
        if "event" not in message:
            return message
    return None


def closed(sock: socket.socket) -> bool:
    """Whether the holder has closed this connection (after what it still had to send)."""
    return read_frame(sock) is None and read_frame(sock) is None


def spawn_request(marker: Path, key: str | None = None, rid: int = 1) -> dict[str, Any]:
    request: dict[str, Any] = {
        "op": "spawn",
        "rid": rid,
        "id": f"planted-{rid}",
        "kind": "pipe",
        "argv": ["sh", "-c", f"readlink /proc/self/ns/net > {marker}"],
        "env": {"PATH": "/usr/bin:/bin"},
        "cwd": "/",
    }
    if key is not None:
        request["key"] = key
    return request


def try_everything(directory: Path, marker: Path, key: str | None) -> list[Any]:
    """Every way in, each on a connection of its own: what the holder answered to each spawn
    (None: it closed the connection first)."""
    attempts: list[list[dict[str, Any]]] = [
        [spawn_request(marker, rid=1)],  # a spawn as the first frame
        [{"op": "hello", "rid": 2}, spawn_request(marker, rid=3)],
        [{"op": "hello", "rid": 4, "key": "0" * 64}, spawn_request(marker, rid=5)],
        [{"op": "hello", "rid": 6, "key": ["not", "a", "key"]}, spawn_request(marker, rid=7)],
        [{"op": "list", "rid": 8}, spawn_request(marker, rid=9, key="0" * 64)],
    ]
    if key is not None:  # what a process that could read the key file would send
        attempts.append([{"op": "hello", "rid": 10, "key": key}, spawn_request(marker, key, 11)])
    answers = []
    for frames in attempts:
        with connect(directory) as sock:
            for message in frames:
                try:
                    send_json(sock, message)
                except (BrokenPipeError, ConnectionResetError):
                    break
            answers.append([answer(sock) for _ in frames])
    return answers


if __name__ == "__main__":
    holder_dir, marker_path = Path(sys.argv[1]), Path(sys.argv[2])
    read_key = None
    if "--key" in sys.argv[3:]:  # (a holder of an older svc has no key file: any key will do)
        key_file = holder_dir / "holder.key"
        read_key = key_file.read_text() if key_file.exists() else "any"
    for answers in try_everything(holder_dir, marker_path, read_key):
        print(json.dumps(answers), flush=True)
