"""Issue 41, finding 5: one malformed frame crashed the holder and every session in it. Raw
frames, from outside svc's code, each on a connection of its own: before the key, after it on a
control connection, and on a session's stream. Each ends its own connection (or is answered
with an error); the holder stays up and the sessions svc uses keep working."""

from __future__ import annotations

import asyncio
import json
import os
import struct
from pathlib import Path

import pytest

from holder.client import HolderClient

from . import raw
from .test_holder import _alive, read_until, shell

pytestmark = pytest.mark.django_db(databases=[])  # no database: the holder is not Django's

J, RESIZE, ACK, INPUT = b"J", b"R", b"A", b"I"
HUGE = struct.pack(">cI", b"J", 0xFFFFFFFF)  # a header announcing 4 GiB, and nothing after it
TRUNCATED = struct.pack(">cI", b"J", 100) + b'{"op": "li'  # and then the connection ends
DEEP = b"[" * 200_000

BEFORE_THE_KEY: dict[str, list[bytes]] = {
    "garbage kind": [struct.pack(">cI", b"Z", 3) + b"abc"],
    "huge length": [HUGE],
    "not JSON": [struct.pack(">cI", b"J", 9) + b"{not json"],
    "deep JSON": [struct.pack(">cI", b"J", len(DEEP)) + DEEP],
    "truncated frame": [TRUNCATED],
    "truncated header": [b"J\x00\x00"],
}


def frame(kind: bytes, payload: bytes | str | object) -> bytes:
    if not isinstance(payload, bytes):
        payload = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
    return struct.pack(">cI", kind, len(payload)) + payload


SPAWN = {"op": "spawn", "id": "x", "kind": "pty", "argv": ["true"], "env": {}, "cwd": "/"}

CONTROL: dict[str, list[bytes]] = {
    "not JSON": [frame(J, "{not json")],
    "a JSON array": [frame(J, [1, 2])],
    "a JSON string": [frame(J, '"spawn"')],
    "a JSON number": [frame(J, "5")],
    "JSON null": [frame(J, "null")],
    "deep JSON": [frame(J, DEEP)],
    "not UTF-8": [frame(J, b'{"op": "\xff\xfe"}')],
    "huge length": [HUGE],
    "garbage kind": [frame(b"Z", b"xyz"), frame(b"\x00", b"")],
    "a stream frame": [frame(RESIZE, {"cols": 1, "rows": 1})],
    "truncated frame": [TRUNCATED],
    "spawn with a string argv": [frame(J, {"op": "spawn", "id": "x", "kind": "pty", "argv": "sh"})],
    "spawn with string sizes": [frame(J, {**SPAWN, "cols": "80", "rows": "24"})],
    "spawn with huge sizes": [frame(J, {**SPAWN, "cols": 1 << 40})],
    "spawn with negative sizes": [frame(J, {**SPAWN, "rows": -1})],
    "spawn with bad base64": [frame(J, {**SPAWN, "preface": "!!"})],
    "spawn with an id leaving its folder": [frame(J, {**SPAWN, "id": "../x"})],
    "spawn with a list env": [frame(J, {**SPAWN, "env": ["A=1"]})],
    "spawn with a NUL in argv": [frame(J, {**SPAWN, "argv": ["tr\u0000ue"]})],
    "attach with a string offset": [frame(J, {"op": "attach", "id": "victim", "offset": "0"})],
    "attach to an object id": [frame(J, {"op": "attach", "id": {"a": 1}})],
}

STREAM: dict[str, list[bytes]] = {
    "RESIZE with strings": [frame(RESIZE, {"cols": "a", "rows": "b"})],
    "RESIZE not JSON": [frame(RESIZE, "80x24")],
    "RESIZE out of range": [frame(RESIZE, {"cols": 10**9, "rows": -1})],
    "RESIZE a list": [frame(RESIZE, [80, 24])],
    "RESIZE with floats": [frame(RESIZE, {"cols": 80.5, "rows": 24})],
    "RESIZE empty": [frame(RESIZE, b"")],
    "ACK with a string": [frame(ACK, {"offset": "12"})],
    "ACK not an object": [frame(ACK, "7")],
    "ACK deep": [frame(ACK, DEEP)],
    "ACK negative": [frame(ACK, {"offset": -5})],
    "garbage kind": [frame(b"Z", b"??")],
    "a JSON request": [frame(J, {"op": "list"})],
    "huge length": [HUGE],
    "truncated frame": [frame(INPUT, b"ok") + TRUNCATED],
}


def try_frames(directory: Path, key: str, first: dict | None, frames: list[bytes]) -> None:
    """One connection: `first` (a keyed request; none: the frames come first), then `frames`;
    read until the holder closes it or a second has passed."""
    with raw.connect(directory, timeout=1) as sock:
        if first is not None:
            raw.send_json(sock, {**first, "key": key})
            assert raw.answer(sock)["ok"] is True
        for data in frames:
            try:
                sock.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                break
        while raw.read_frame(sock) is not None:
            pass


async def test_malformed_frames_end_only_their_own_connection(
    holder: HolderClient, tmp_path: Path
) -> None:
    directory = tmp_path / "holder"
    await holder.spawn("term", kind="pty", cwd=str(tmp_path), **shell("cat"))
    agent_script = 'while read l; do echo "a:$l"; done'
    await holder.spawn(
        "agent",
        kind="pipe",
        argv=("bash", "-c", agent_script),
        env={"PATH": os.environ["PATH"]},
        cwd=str(tmp_path),
    )
    victim = await holder.spawn("victim", kind="pty", cwd=str(tmp_path), **shell("sleep 600"))
    term, agent = await holder.attach("term", 0), await holder.attach("agent", -1)
    holder_pid = int((directory / "holder.pid").read_text())
    key_file = directory / "holder.key"
    key = key_file.read_text() if key_file.exists() else ""  # (the code before issue 41: none)
    attach = {"op": "attach", "id": "victim", "offset": 0, "lease": False}
    cases = [
        *((f"before the key: {n}", None, f) for n, f in BEFORE_THE_KEY.items()),
        *((f"control: {n}", {"op": "hello"}, f) for n, f in CONTROL.items()),
        *((f"stream: {n}", attach, f) for n, f in STREAM.items()),
    ]
    for number, (name, first, frames) in enumerate(cases):
        await asyncio.to_thread(try_frames, directory, key, first, frames)
        try:
            term.write(f"t{number}\r".encode())
            await read_until(term, f"t{number}\r\n".encode(), timeout=5)
            agent.write(f"c{number}\n".encode())
            await read_until(agent, f"a:c{number}\n".encode(), timeout=5)
        except (AssertionError, TimeoutError) as exc:
            await asyncio.sleep(1)  # for a holder on its way out to be gone
            state = "is up" if _alive(holder_pid) else "died"
            raise AssertionError(
                f"after {name!r} the holder {state}; svc's sessions stopped"
            ) from exc
    held = {s["id"]: s for s in await holder.sessions()}
    assert set(held) == {"term", "agent", "victim"}  # nothing was spawned by a bad request
    assert held["victim"]["finished"] is False and _alive(victim)
    log = (directory / "holder.log").read_text() if (directory / "holder.log").exists() else ""
    assert "Traceback" not in log  # each was foreseen, none reached the catch-all
    warnings = [line for line in log.splitlines() if " WARNING " in line]
    assert 0 < len(warnings) <= 3, log  # once per reason: no process can fill the log
    term.close()
    agent.close()
