"""The remote listener's own budget (contract §13): whatever arrives through a tunnel can never
take what the main port needs.

The two listeners share one reactor and one file-descriptor table. Without a budget, a stranger
holding a thousand connections open — each trickling one header byte every 20 s, which resets
Twisted's idle timeout every time — fills the descriptor table, and the owner's requests on the
main port fail with EMFILE for as long as they are held. So the remote socket's factory is
wrapped:

- **a cap on concurrent connections**: at the cap the remote socket stops accepting (new
  connections wait in the kernel's short backlog, or are not answered at all, costing svc
  neither a descriptor nor a cycle) and starts again when one ends; one accepted in the same
  burst past the cap is closed at once;
- **a header deadline**: a connection that is not serving a request must finish a request's
  headers within `header_seconds` of opening or of its previous request's headers, whatever it
  trickles; one that does not is cut off. A request being answered (a long preview stream, a
  WebSocket) is never cut.

Twisted's own `policies.WrappingFactory` keeps the count; the deadline is a timer per
connection. Request bodies are judged before they are read by svc's admission rules
(svcproject.admission), which this module does not repeat.
"""

from __future__ import annotations

import resource
import time
from typing import Any

from twisted.protocols.policies import ProtocolWrapper, WrappingFactory

from core import twisted_reactor

MAX_CONNECTIONS = 256
HEADER_SECONDS = 10.0


def headers_done(channel: Any) -> None:
    """Called by svc's request class once a request's headers are in (its `gotLength`)."""
    channel.svc_headers_at = time.monotonic()


class _Budgeted(ProtocolWrapper):
    factory: BudgetFactory

    def connectionMade(self) -> None:
        self._opened = time.monotonic()
        self._timer: Any = None
        super().connectionMade()
        self._arm(self.factory.header_seconds)

    def _arm(self, seconds: float) -> None:
        self._timer = twisted_reactor.installed().callLater(max(seconds, 0.05), self._check)

    def _check(self) -> None:
        self._timer = None
        # Twisted's HTTP factory builds a proxy that negotiates HTTP/1.1 or HTTP/2 around the
        # channel: the requests are the channel's.
        inner = self.wrappedProtocol
        while hasattr(inner, "wrappedProtocol"):  # TLS (the LAN listener) around the HTTP
            inner = inner.wrappedProtocol
        inner = getattr(inner, "_channel", inner)
        requests = getattr(inner, "requests", None)
        if requests is None:
            return  # upgraded to a WebSocket: daphne's own timeouts and pings apply from here
        if any(getattr(r, "svc_headers_complete", False) for r in requests):
            self._arm(self.factory.header_seconds)  # answering a request: look again later
            return
        since = max(self._opened, getattr(inner, "svc_headers_at", 0.0))
        left = self.factory.header_seconds - (time.monotonic() - since)
        if left > 0:
            self._arm(left)
        else:
            self.factory.cut_off += 1
            self.transport.abortConnection()

    def connectionLost(self, reason: Any) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        super().connectionLost(reason)


class BudgetFactory(WrappingFactory):
    """The main HTTP factory behind a connection cap and a header deadline."""

    protocol = _Budgeted

    def __init__(
        self,
        wrapped: Any,
        max_connections: int = MAX_CONNECTIONS,
        header_seconds: float = HEADER_SECONDS,
    ) -> None:
        super().__init__(wrapped)
        self.max_connections = max_connections
        self.header_seconds = header_seconds
        self.refused = 0  # connections closed at the cap (bench and logs)
        self.cut_off = 0  # connections cut off at the header deadline
        self.port: Any = None  # the listening port, once bound: paused at the cap

    def buildProtocol(self, addr: Any) -> Any:
        if len(self.protocols) >= self.max_connections:
            self.refused += 1
            return None  # Twisted closes the accepted socket at once
        return super().buildProtocol(addr)

    def registerProtocol(self, protocol: Any) -> None:
        super().registerProtocol(protocol)
        if len(self.protocols) >= self.max_connections and self.port is not None:
            self.port.stopReading()  # accept nothing more until one ends

    def unregisterProtocol(self, protocol: Any) -> None:
        super().unregisterProtocol(protocol)
        below = len(self.protocols) < self.max_connections
        if below and self.port is not None and self.port.connected:
            self.port.startReading()


def raise_open_files_limit() -> tuple[int, int]:
    """The soft limit on open files raised to the hard one (many systems start processes at
    1,024 while allowing far more): (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):
            return soft, soft
        return soft, wanted
    return soft, soft
