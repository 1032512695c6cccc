"""A fake holder, planted where a holder's socket may be looked for: it answers as a holder of
version 1 would (hello, spawn, list, attach all "ok") and prints every frame it receives as a
JSON line: what a planted listener steals (environments, keystrokes). Standard library only, run
as a program of its own: `FOLDER=<dir> python fake_holder.py`, or its text as the code of
harness/other_user.py's `popen_as_other`. It prints "listening" once it listens."""

import json
import os
import socket
import struct
import threading

HEADER = struct.Struct(">cI")


def answer(conn: socket.socket, request: dict) -> None:
    reply = {"ok": True, "rid": request.get("rid"), "version": 1, "pid": os.getpid()}
    reply.update(sessions=[], offset=0, generation=1, exit_code=None)
    body = json.dumps(reply).encode()
    conn.sendall(HEADER.pack(b"J", len(body)) + body)


def serve(conn: socket.socket) -> None:
    buffer = b""
    while data := conn.recv(1 << 16):
        buffer += data
        while len(buffer) >= HEADER.size:
            kind, size = HEADER.unpack_from(buffer)
            if len(buffer) < HEADER.size + size:
                break
            payload = buffer[HEADER.size : HEADER.size + size]
            buffer = buffer[HEADER.size + size :]
            got = {"kind": kind.decode("latin-1"), "payload": payload.decode("latin-1")}
            print(json.dumps(got), flush=True)
            if kind == b"J":
                answer(conn, json.loads(payload))


def main() -> None:
    folder = os.environ["FOLDER"]
    os.makedirs(folder, mode=0o700, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(folder, "holder.sock"))
    listener.listen(16)
    print("listening", flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()
