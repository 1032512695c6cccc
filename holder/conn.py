"""One client connection to the holder: a control connection, or a session's stream once
attached."""

from __future__ import annotations

import contextlib
import logging
import socket
from typing import Any

from holder import protocol as p
from holder.held import BACKLOG, READ_SIZE, Held
from holder.loop import Owner

logger = logging.getLogger("holder")

FIRST_FRAME_S = 10.0  # a connection that has not shown the key by then is closed


class Conn:
    """One client connection: a control connection, or a session's stream once attached."""

    def __init__(self, holder: Owner, sock: socket.socket) -> None:
        self.holder, self.sock = holder, sock
        self.fd = sock.fileno()
        self.inbuf = bytearray()
        self.out = bytearray()
        self.session: Held | None = None
        self.control = False  # said hello: hears of every session's exit
        self.authed = False  # its first frame carried the holder's key (holder/key.py)
        self.closed = False
        holder.loop.watch(self.fd, self.on_readable, None)
        holder.loop.later(FIRST_FRAME_S, self._unless_authed)

    def _unless_authed(self) -> None:
        if not self.authed:
            self.close()

    def send(self, data: bytes) -> None:
        if self.closed:
            return
        self.out += data
        self.flush()

    def send_output(self, data: bytes) -> None:
        """An output frame without joining header and payload: with nothing queued, both go
        to the socket in one call and only what it did not take is kept (a flood's every
        chunk is otherwise copied twice more before it leaves)."""
        if self.closed:
            return
        header = p.HEADER.pack(p.OUTPUT, len(data))
        if self.out:
            self.out += header
            self.out += data
            self.flush()
            return
        try:
            sent = self.sock.sendmsg([header, data])
        except BlockingIOError:
            sent = 0
        except OSError:
            self.close()
            return
        if sent < len(header) + len(data):
            self.out += (header + data)[sent:] if sent < len(header) else data[sent - len(header) :]
            self.holder.loop.watch(self.fd, self.on_readable, self.on_writable)

    def reply(self, message: dict[str, Any]) -> None:
        self.send(p.json_frame(p.JSON, message))

    def flush(self) -> None:
        if self.out:
            try:
                sent = self.sock.send(self.out)
            except BlockingIOError:
                sent = 0
            except OSError:
                self.close()
                return
            del self.out[:sent]
        self.holder.loop.watch(self.fd, self.on_readable, self.on_writable if self.out else None)

    def on_writable(self) -> None:
        self.flush()
        if self.session is not None and len(self.out) < BACKLOG:
            self.session.pump()

    def on_readable(self) -> None:
        try:
            data = self.sock.recv(READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        self.inbuf += data
        try:
            self._take_frames()
        except Exception as exc:  # one connection's bad frame ends it, never the holder
            self.holder.on_bad_frame(self, exc)

    def _take_frames(self) -> None:
        if not self.authed:  # the first frame alone, and small: nothing else counts before it
            if (first := p.first_frame(self.inbuf)) is None:
                return
            self.holder.on_first_frame(self, *first)
        for kind, payload in p.split_frames(self.inbuf):
            if self.closed:
                return
            self.holder.on_frame(self, kind, payload)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.holder.loop.watch(self.fd, None, None)
        with contextlib.suppress(OSError):
            self.sock.close()
        self.holder.conns.discard(self)
        if self.session is not None and self.session.stream is self:
            self.session.detach()
