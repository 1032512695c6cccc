"""The remote listener's LAN socket (contract §13 `remote.lan`, remote_app.lan) as Twisted
serves it: TLS in front of daphne's own HTTP factory, behind the remote listener's budget."""

from __future__ import annotations

from typing import Any

from twisted.internet import ssl
from twisted.protocols.tls import TLSMemoryBIOFactory

from core import twisted_reactor
from core.connection_budget import BudgetFactory
from core.server_compat import main_http_factory


def listen_tls_beside(
    address: str,
    port: int,
    cert_pem: bytes,
    key_pem: bytes,
    max_connections: int,
    header_seconds: float,
) -> Any:
    """One more socket of the remote listener, on `address` with TLS. The same daphne factory
    and a budget of its own, counted on the TCP connection, outside TLS: a stranger's handshake
    that never ends is cut off at the header deadline like headers that never end. Returns
    Twisted's listening port, for `stop_tls_listener`."""
    factory = main_http_factory()
    # Twisted's defaults: TLS 1.2 at least, its own cipher list (no weak ones).
    options = ssl.PrivateCertificate.loadPEM(cert_pem + key_pem).options()
    budget = BudgetFactory(
        TLSMemoryBIOFactory(options, False, factory), max_connections, header_seconds
    )
    listening = twisted_reactor.installed().listenTCP(port, budget, interface=address)
    budget.port = listening
    return listening


def stop_tls_listener(listening: Any) -> None:
    """Stop accepting and end every connection it accepted, now: none may outlive the listener."""
    listening.stopListening()
    budget = getattr(listening, "factory", None)
    for protocol in list(getattr(budget, "protocols", {}) or {}):
        protocol.transport.abortConnection()
