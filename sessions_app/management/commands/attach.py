"""`manage.py attach <session id>`: this terminal becomes a viewer of a hosted terminal session.

Raw mode, so every key (Ctrl-C included) goes to the session; the window size follows this
terminal (SIGWINCH). Ctrl-] detaches and leaves the session running. Like ssh, the command
exits with the session's own exit code when the session ends (0 when detached).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import termios
import tty
from dataclasses import dataclass
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from core.client_command import ClientCommand, api, base_url, headers

DETACH = b"\x1d"  # Ctrl-]


class Command(ClientCommand):
    help = "Attach this terminal to a hosted terminal session (Ctrl-] detaches)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("session_id")

    def handle(self, *args: Any, **options: Any) -> None:
        session = api("GET", f"sessions/{options['session_id']}")
        finish(self, attach_terminal(session))


@dataclass
class Ended:
    """How an attachment ended: what to tell the person, and the command's exit status."""

    message: str
    status: int = 0


def finish(command: BaseCommand, ended: Ended) -> None:
    command.stdout.write(f"\r\n[{ended.message}]")
    command.stdout.flush()
    if ended.status:
        raise SystemExit(ended.status)


def attach_terminal(session: dict[str, Any]) -> Ended:
    """Be a raw-mode viewer of this terminal session until it exits or Ctrl-] detaches."""
    if session["kind"] != "terminal":
        raise CommandError(f"session {session['id']} is a {session['kind']} session")
    if not sys.stdin.isatty():
        raise CommandError("attach needs a terminal on stdin")
    saved = termios.tcgetattr(sys.stdin.fileno())
    try:
        tty.setraw(sys.stdin.fileno())
        return asyncio.run(_attach(session["id"]))
    finally:
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)


async def _attach(session_id: str) -> Ended:
    url = base_url().replace("http", "ws", 1) + f"/ws?session_id={session_id}"
    async with connect(url, additional_headers=headers(), max_size=None) as ws:
        loop = asyncio.get_running_loop()
        detached = loop.create_future()
        size = SizeFollower(ws)
        size.send_if_changed()
        loop.add_signal_handler(signal.SIGWINCH, size.send_if_changed)
        loop.add_reader(sys.stdin.fileno(), _forward_keys, ws, size, detached)
        try:
            output = loop.create_task(_print_output(ws))
            done, _ = await asyncio.wait({output, detached}, return_when=asyncio.FIRST_COMPLETED)
            if detached in done:
                return Ended("detached; the session keeps running")
            return output.result()
        finally:
            loop.remove_reader(sys.stdin.fileno())
            loop.remove_signal_handler(signal.SIGWINCH)


def _forward_keys(ws: ClientConnection, size: SizeFollower, detached: asyncio.Future) -> None:
    data = os.read(sys.stdin.fileno(), 4096)
    if DETACH in data or not data:
        if not detached.done():
            detached.set_result(True)
        return
    # Keys typed after a resize reach the session after it, even when SIGWINCH is handled late.
    size.send_if_changed()
    asyncio.get_running_loop().create_task(ws.send(data))


def _terminal_size() -> os.terminal_size:
    """The terminal's own size. COLUMNS/LINES in the environment (shutil's first choice) do not
    follow a resize, and a parent process may have set them to anything; shutil's fallback is
    only for a pty nobody sized (0x0)."""
    with contextlib.suppress(OSError):
        size = os.get_terminal_size(sys.stdin.fileno())
        if size.columns and size.lines:
            return size
    return shutil.get_terminal_size()


class SizeFollower:
    """Tells the session this terminal's size whenever it differs from what was last sent."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.sent: os.terminal_size | None = None

    def send_if_changed(self) -> None:
        size = _terminal_size()
        if size != self.sent:
            self.sent = size
            resize = {"type": "resize", "cols": size.columns, "rows": size.lines}
            asyncio.get_running_loop().create_task(self._send(json.dumps(resize)))

    async def _send(self, message: str) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self.ws.send(message)


async def _print_output(ws: ClientConnection) -> Ended:
    out = sys.stdout.buffer
    async for frame in ws:
        if isinstance(frame, bytes):
            out.write(frame)
            out.flush()
            continue
        event = json.loads(frame)
        if event.get("type") == "exited":
            code = event.get("exit_code")
            status = code if isinstance(code, int) and 0 <= code < 256 else 1
            return Ended(f"session exited with code {code}", status)
        if event.get("type") == "skipped":
            out.write(f"\r\n[svc: {event['bytes']} bytes skipped]\r\n".encode())
    return Ended("the connection to svc closed", 1)
