"""Everything svc knows about the server it runs in (daphne, on Twisted's asyncio reactor).

ASGI leaves some things out that svc needs, so they are learned from the server here, in one
place, and checked at start-up:

- the port the daemon is actually bound to (runserver's address, daphne's `-p` or endpoint):
  found on the reactor's listening TCP ports once the reactor runs;
- the request's length and headers before its body (Twisted's `gotLength`), where svc's
  admission rules (svcproject.admission) refuse oversized or uncredentialed bodies;
- when a WebSocket client cannot take more output (Twisted's producer API), so a terminal
  viewer that stops reading holds its own queue back, not the daemon's memory.

Each hook is proven by a self-test at start-up; svc refuses to start without them. Twisted is
pinned in requirements.txt: these are the parts of it svc relies on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from collections.abc import Callable
from typing import Any, cast

import daphne.http_protocol as daphne_http
from twisted.internet import tcp
from twisted.internet.abstract import FileDescriptor
from twisted.internet.testing import StringTransport
from twisted.web import http as twisted_http
from twisted.web.http import HTTPChannel

from core import local_peer, twisted_reactor
from core.connection_budget import BudgetFactory, headers_done

logger = logging.getLogger(__name__)


def _reactor() -> Any:
    """Twisted's reactor when svc runs under daphne, else None (tests in process, other servers)."""
    return twisted_reactor.running()


def _listening() -> list[Any]:
    """The reactor's listening TCP sockets (daphne's endpoints, then those svc added)."""
    reactor = _reactor()
    if reactor is None:
        return []

    return [r for r in reactor.getReaders() if isinstance(r, tcp.Port) and r.connected]


def listening_tcp_ports() -> list[int]:
    """Ports of the TCP sockets the reactor listens on (daphne's endpoints)."""
    return sorted({reader.getHost().port for reader in _listening()})


def listening_host(port: int) -> str:
    """The address the reactor's TCP socket on `port` is bound to ("127.0.0.1", "::1",
    "0.0.0.0"); "" outside Twisted or when no socket listens on that port."""
    hosts = [str(r.getHost().host) for r in _listening() if r.getHost().port == port]
    return hosts[0] if hosts else ""


def main_http_factory() -> object:
    """daphne's HTTP factory, the main socket's: another socket it serves is the same app."""
    if _reactor() is None:
        raise RuntimeError("not running under daphne")
    sockets = _listening()
    if not sockets:
        raise RuntimeError("daphne's listening socket was not found")
    return sockets[0].factory


def listen_beside(port: int, max_connections: int, header_seconds: float) -> int:
    """Bind one more loopback socket served by the same daphne HTTP factory as the main one (the
    remote listener, contract §13), behind a budget of its own (core.connection_budget);
    returns the port bound. The app tells the two apart by the ASGI scope's `server` port, which
    is the socket's own, whatever the request says. (Its LAN socket: core.tls_listener.)"""
    budget = BudgetFactory(main_http_factory(), max_connections, header_seconds)
    listening = _reactor().listenTCP(port, budget, interface="127.0.0.1")
    budget.port = listening
    return int(listening.getHost().port)


def when_listening(callback: Callable[[int], None]) -> bool:
    """Call `callback(port)` once the server is bound; False when not running under Twisted.

    daphne starts listening before it runs the reactor, so a `callWhenRunning` hook sees the
    bound sockets — whichever way the address was given (runserver, `daphne -p`, `-e tcp:…`)."""
    reactor = _reactor()
    if reactor is None:
        return False

    def found() -> None:
        ports = listening_tcp_ports()
        if not ports:
            logger.warning("svc could not find its listening port; URLs use auth.json's port")
            return
        if len(ports) > 1:
            logger.info("listening on several ports %s; URLs use %d", ports, ports[0])
        callback(ports[0])

    reactor.callWhenRunning(found)
    return True


# --- limits and credentials before the body ----------------------------------------------------
# daphne hands a request to the app only once Twisted has read its whole body (into memory or a
# temporary file), then queues all of it as 8 KiB messages. Twisted's Request learns the length
# from the headers first (`gotLength`) and receives the body piece by piece
# (`handleContentChunk`): svc's admission rules run there, so a refused body is never read.

_REASONS = {
    401: b"Unauthorized",
    403: b"Forbidden",
    405: b"Method Not Allowed",
    413: b"Content Too Large",
}


def admitting_request_class(admit: Callable, head_of: Callable, body_limit: Callable) -> type:
    """daphne's WebRequest with svc's rules applied on the headers and on each body piece."""

    class AdmittingRequest(_daphne_request()):  # type: ignore[misc]
        _refused = False
        _limit: int | None = None
        _received = 0

        def gotLength(self, length: int | None) -> None:
            self.svc_headers_complete = True  # the remote listener's header deadline is met
            headers_done(self.channel)
            head = head_of(
                self.channel._command,
                self.channel._path,
                [
                    (name, value)
                    for name, values in self.requestHeaders.getAllRawHeaders()
                    for value in values
                ],
                _peer(self.channel),
                length,
                _server_port(self.channel),
                self.channel,
            )
            answer = admit(head)
            if answer is not None:
                self._refuse(answer.status, answer.body, answer.headers)
                return
            self._limit = body_limit(head)
            super().gotLength(length)

        def handleContentChunk(self, data: bytes) -> None:
            if self._refused:
                return
            self._received += len(data)
            if self._limit is not None and self._received > self._limit:
                body = b'{"error": {"status": 413, "message": "request body too large"}}'
                self._refuse(413, body, [(b"content-type", b"application/json")])
                return
            super().handleContentChunk(data)

        def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
            if not self._refused:
                super().requestReceived(command, path, version)

        def _refuse(self, status: int, body: bytes, headers: list) -> None:
            """Answer now, while the client still holds the body, and close the connection."""
            self._refused = True
            self.content = None
            lines = [b"HTTP/1.1 %d %s" % (status, _REASONS.get(status, b"Refused"))]
            lines += [b"%s: %s" % (k, v) for k, v in headers]
            lines += [b"content-length: %d" % len(body), b"connection: close", b"", body]
            transport = self.channel.transport
            transport.write(b"\r\n".join(lines))
            transport.loseConnection()

    return AdmittingRequest


def _daphne_request() -> type:
    """daphne's own request class, even once svc's has replaced it in daphne's module."""
    if not hasattr(daphne_http, "_daphne_WebRequest"):
        daphne_http._daphne_WebRequest = daphne_http.WebRequest
    return daphne_http._daphne_WebRequest


def _server_port(channel: object) -> int | None:
    try:
        return int(channel.transport.getHost().port)  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return None


def _peer(channel: object) -> str:
    try:
        return str(channel.transport.getPeer().host)  # type: ignore[attr-defined]
    except AttributeError:
        return ""


# --- who is at the other end ---------------------------------------------------------------------
# The bridge gate's last rule (contract §2, core.local_peer) needs the local user behind a
# connection. It is learned once per connection and kept on daphne's HTTP channel, which lives
# exactly as long as the TCP connection: a later connection that reuses the same addresses is a
# new channel, asked again. (Looking again on each request would tell nothing more: the kernel
# keeps the uid of the socket's creator, whoever holds it later.)


def connection_behind(send: object) -> object | None:
    """The HTTP connection (daphne's channel) an ASGI `send` answers on; None outside daphne."""
    return getattr(_daphne_protocol(send), "channel", None)


def connection_peer_uid(channel: object) -> int | None:
    """The uid of the process at the other end of this loopback connection (None: unknown)."""
    known = getattr(channel, "svc_peer_uid", _UNASKED)
    if known is not _UNASKED:
        return cast("int | None", known)

    uid = None
    transport = getattr(channel, "transport", None)
    if transport is not None:
        peer, own = transport.getPeer(), transport.getHost()
        if hasattr(peer, "port") and hasattr(own, "port"):
            uid = local_peer.socket_uid((peer.host, peer.port), (own.host, own.port))
    channel.svc_peer_uid = uid  # type: ignore[attr-defined]
    return uid


_UNASKED = object()


def install_admission(admit: Callable, head_of: Callable, body_limit: Callable) -> bool:
    """Make daphne build svc's request class (its factory looks the class up by name on each
    connection), then prove on a fake connection that the rules run before the body. False when
    svc is not served by daphne (in-process tests)."""
    if _reactor() is None or "daphne.server" not in sys.modules:
        return False

    daphne_http.WebRequest = admitting_request_class(admit, head_of, body_limit)
    problem = admission_self_test()
    if problem:
        raise RuntimeError(f"svc cannot enforce request limits before the body: {problem}")
    return True


def admission_self_test() -> str | None:
    """None when an uncredentialed request announcing 1 GB is refused on its headers."""

    channel = HTTPChannel()
    channel.requestFactory = daphne_http.WebRequest
    refused: list[int] = []

    class Probe(daphne_http.WebRequest):
        def __init__(self, channel: object, *args: object) -> None:  # no daphne server here
            twisted_http.Request.__init__(self, channel, *args)

        def _refuse(self, status: int, body: bytes, headers: list) -> None:
            refused.append(status)
            super()._refuse(status, body, headers)

    channel.requestFactory = Probe
    channel.makeConnection(StringTransport())
    channel.dataReceived(
        b"POST /api/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 999999999\r\n\r\n"
    )
    if not refused:
        return "an unauthenticated 1 GB body on /api/ was not refused on its headers"
    return None


# --- terminal backpressure ---------------------------------------------------------------------
# daphne's `send` never waits for a slow WebSocket client: Twisted buffers without bound. Twisted's
# public producer API is the way to hear about it: a streaming producer registered on the
# transport is paused when the transport's write buffer passes its bufferSize and resumed when
# the buffer has drained. A terminal viewer waits on that before sending more.


BUFFER_BYTES = 512 << 10


class SocketFlow:
    """Whether one client connection can take more output now (an IPushProducer)."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()

    def pauseProducing(self) -> None:
        self.writable.clear()

    def resumeProducing(self) -> None:
        self.writable.set()

    def stopProducing(self) -> None:  # the connection is gone: nobody waits
        self.writable.set()

    async def wait_writable(self) -> None:
        await self.writable.wait()


def _daphne_protocol(send: object) -> object | None:
    """daphne hands the app `partial(server.handle_reply, protocol)`; None under other servers."""
    if isinstance(send, functools.partial) and send.args:
        return send.args[0]
    return None


def socket_flow(send: object) -> SocketFlow:
    """The flow of the connection behind an ASGI `send`. Outside daphne (in-process tests) the
    flow is always writable: there is no socket to fill."""
    flow = SocketFlow()
    transport = getattr(_daphne_protocol(send), "transport", None)
    while transport is not None and hasattr(transport, "wrappedProtocol"):
        transport = getattr(transport, "transport", None)  # TLS / policy wrappers
    if transport is None or not hasattr(transport, "registerProducer"):
        return flow
    if getattr(transport, "producer", None) is not None:
        # The HTTP channel that handed this connection over to the WebSocket still holds it,
        # and it may have paused *reading* (it does while its write buffer is full, or while
        # request data piles up): gone, it would never resume it, and the client's keys (a
        # Ctrl-C mid-flood) would never be read. Reading stays on; writing is our flow's.
        transport.unregisterProducer()
        transport.resumeProducing()
    # Pause above this many unsent bytes (Twisted's default, 64 KiB, stalls a fast reader
    # between frames of up to 256 KiB); memory per viewer stays bounded all the same.
    transport.bufferSize = max(getattr(transport, "bufferSize", 0), BUFFER_BYTES)
    transport.registerProducer(flow, True)
    return flow


def allow_messages_up_to(send: object, size: int) -> None:
    """daphne caps WebSocket messages (1 MiB since daphne 4.2.2), in both directions; a
    terminal's scrollback frame (up to 2 MiB, contract §7) must fit. Raised for this connection only
    — an owner's terminal viewer — never for the server as a whole."""
    protocol: Any = _daphne_protocol(send)
    if protocol is not None and getattr(protocol, "maxMessagePayloadSize", 0) not in (0, None):
        protocol.maxMessagePayloadSize = max(protocol.maxMessagePayloadSize, size)


def send_empty_binary_frame(send: object) -> bool:
    """daphne drops an empty `bytes` message, yet an empty scrollback is still a frame clients
    count on (contract §7): send it through daphne's own protocol. False outside daphne."""
    protocol = _daphne_protocol(send)
    if protocol is None or not hasattr(protocol, "serverSend"):
        return False
    protocol.serverSend(b"", True)
    return True


def backpressure_self_test(flow_for: Callable[[object], SocketFlow] | None = None) -> str | None:
    """None when a transport that cannot send pauses the viewer's flow; else why not.

    Runs Twisted's own transport code (FileDescriptor.write and its producer rules) with a
    socket that accepts nothing, through the same hook (`socket_flow`) viewers use."""

    class _Reactor:
        def addWriter(self, _: object) -> None:
            pass

        def removeWriter(self, _: object) -> None:
            pass

    class _Stuck(FileDescriptor):
        connected = True

        def writeSomeData(self, data: bytes) -> int:  # a client that reads nothing
            return 0

    class _Protocol:
        transport = _Stuck(reactor=_Reactor())

    flow = (flow_for or socket_flow)(functools.partial(print, _Protocol()))
    _Protocol.transport.write(b"x" * (_Protocol.transport.bufferSize * 4))
    if flow.writable.is_set():
        return "a client that reads nothing did not pause the terminal output (no backpressure)"
    return None


def check_backpressure() -> None:
    """At start-up: terminal backpressure must work on this Twisted, or svc refuses to start."""
    if _reactor() is None:
        return
    problem = backpressure_self_test()
    if problem:
        raise RuntimeError(f"svc cannot protect terminals from slow clients: {problem}")
