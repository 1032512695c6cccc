"""The remote listener on a LAN address (contract §13 `remote.lan`; docs/remote.md "A phone on
the same network"): with nothing but this machine, a phone on the same network opens svc.

It is a second socket of the remote listener, never of the main port: the same daphne factory
behind the same gate (its port is put in `Reach.lan_ports`, so remote_app.gate and the
before-body admission treat its requests exactly as the loopback socket's), the same pairing,
and a budget of its own with the remote listener's numbers. It is served with TLS (a
certificate made here, pinned by its fingerprint: remote_app.lan_cert), bound only while
`remote.lan.enabled` is true, and closed — with every connection it accepted — when it is
turned off, without a restart.

Also here: the address and port the Remote view shows, and the SSH command that reaches the
loopback socket from a computer that can log in to this machine.
"""

from __future__ import annotations

import asyncio
import getpass
import ipaddress
import logging
import socket
from typing import Any

from core import config, settings_store, tls_listener
from core.settings_schema import Settings
from remote_app import lan_cert

logger = logging.getLogger(__name__)

# Any address outside the LAN: connecting a UDP socket sends nothing, but makes the kernel choose
# the source address of the default route (TEST-NET-2, never a LAN's own).
_OUTSIDE = ("198.51.100.1", 9)


def _usable(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return ip.version == 4 and not ip.is_loopback and not ip.is_unspecified


def _default_route_address() -> str:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(_OUTSIDE)
            found = str(probe.getsockname()[0])
    except OSError:
        return ""  # no default route: a network without a router, or none at all
    return found if _usable(found) else ""


def _host_name_addresses() -> list[str]:
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
    except OSError:
        return []
    return [str(info[4][0]) for info in infos if _usable(str(info[4][0]))]


def lan_address(configured: str = "") -> tuple[str, str]:
    """(the address to serve the phone on, "") or ("", why there is none). An address found
    here is only taken when it is not a public one: a phone "on the same network" must not
    mean the internet (naming it in `remote.lan.address` does)."""
    if configured:
        return configured, ""
    found = _default_route_address() or next(iter(_host_name_addresses()), "")
    if not found:
        return "", (
            "this machine has no network address besides 127.0.0.1: join the phone's network, "
            "or name the address in settings.json as remote.lan.address"
        )
    if ipaddress.ip_address(found).is_global:
        return "", (
            f"this machine's address {found} is a public one, reachable from the internet: name "
            "it in settings.json as remote.lan.address to serve the phone there anyway"
        )
    return found, ""


class LanListener:
    """The LAN socket: bound on `apply` when settings say so, closed when they no longer do."""

    def __init__(self, reach: Any) -> None:
        self.reach = reach
        self.enabled = False
        self.address = ""
        self.port = 0
        self.fingerprint = ""
        self.detail = ""  # why it is not serving while enabled
        self._listening: Any = None
        self._bound_as: tuple[Any, ...] | None = None
        self._lock = asyncio.Lock()

    async def apply(self, settings: Settings) -> None:
        """Bind, keep or close the socket for these settings (again on every settings change:
        unchanged settings leave an open socket and its connections as they are)."""
        async with self._lock:
            wanted = settings.remote_lan
            self.enabled = wanted.enabled
            if not wanted.enabled:
                self._close()
                self.detail = ""
                return
            address, why = await asyncio.to_thread(lan_address, wanted.address)
            budget = (settings.remote_max_connections, settings.remote_header_timeout_s)
            bound_as = (address, wanted.port, *budget)
            if self._listening is not None and bound_as == self._bound_as:
                return
            self._close()
            if not address:
                self.detail = why
                return
            try:
                cert = await asyncio.to_thread(lan_cert.certificate_for, config.svc_home(), address)
                self._bind(address, wanted.port, cert, *budget)
            except Exception as exc:
                self.detail = f"cannot serve on {address}: {exc}"
                logger.warning("svc's LAN listener: %s", self.detail)
                return
            self._bound_as, self.address, self.fingerprint = bound_as, address, cert.fingerprint
            self.detail = ""
            logger.info("svc's remote listener also serves https://%s:%d/", address, self.port)

    def _bind(
        self,
        address: str,
        configured: int,
        cert: lan_cert.LanCertificate,
        max_connections: int,
        header_seconds: float,
    ) -> None:
        main = config.current_auth().port
        if configured and configured == main:
            raise ValueError(f"remote.lan.port {configured} is svc's main port")
        # The remote listener's number first: one number for both (the loopback one for
        # tunnels and SSH, this one for the phone), kept across restarts as it is.
        ports = [configured] if configured else [self.reach.remote_port, 0]
        error: Exception | None = None
        for port in [p for p in ports if p != main] or [0]:
            try:
                listening = tls_listener.listen_tls_beside(
                    address, port, cert.cert_pem, cert.key_pem, max_connections, header_seconds
                )
            except Exception as exc:  # in use: the next one
                error = exc
                continue
            bound = int(listening.getHost().port)  # type: ignore[attr-defined]
            if bound == main:  # never, but a port of the main socket must never be remote
                tls_listener.stop_tls_listener(listening)
                continue
            self.reach.lan_ports.add(bound)  # before the first connection can be accepted
            self._listening, self.port = listening, bound
            return
        raise error or RuntimeError("no port was free")

    def _close(self) -> None:
        if self._listening is not None:
            tls_listener.stop_tls_listener(self._listening)
            logger.info("svc's LAN listener on %s:%d is closed", self.address, self.port)
        self._listening, self._bound_as = None, None
        self.address, self.port, self.fingerprint = "", 0, ""

    def stop(self) -> None:
        self._close()

    def state(self) -> dict[str, Any]:
        """What the Remote view shows (GET /api/remote, contract §13)."""
        on = self._listening is not None
        url = f"https://{self.address}:{self.port}/" if on else None
        return {
            "enabled": self.enabled,
            "status": "on" if on else ("error" if self.enabled else "off"),
            "address": self.address or None,
            "port": self.port or None,
            "url": url,
            # What the QR code carries: the fingerprint rides in the fragment (no server sees
            # it), for the pairing page to show beside the browser's own.
            "link": f"{url}#cert={self.fingerprint}" if on else None,
            "fingerprint": self.fingerprint or None,
            "detail": self.detail or None,
        }


def ssh_command(remote_port: int, address: str) -> str | None:
    """What to run on a computer that can log in to this machine by SSH: the remote listener's
    loopback port, forwarded to the same number there (then http://127.0.0.1:<port>/)."""
    if not remote_port:
        return None
    host = address or socket.gethostname()
    return f"ssh -N -L {remote_port}:127.0.0.1:{remote_port} {getpass.getuser()}@{host}"


def access_state(listener: LanListener, port: int) -> dict[str, Any]:
    """GET /api/remote: where the remote listener is (its loopback `port`, 0 when it could not
    be bound), the LAN socket, and the SSH command."""
    lan = listener.state()
    try:
        named = config.current_settings().remote_lan.address
    except config.SettingsError:
        named = ""  # a broken settings.json: where svc listens is still worth showing
    address = lan["address"] or lan_address(named)[0]
    return {
        "listener": {"address": "127.0.0.1", "port": port or None},
        "lan": lan,
        "ssh": {"command": ssh_command(port, address), "url": f"http://127.0.0.1:{port}/"}
        if port
        else None,
    }


def lan_enable(enabled: bool) -> Settings:
    """Turn the LAN socket on or off in settings.json (`remote.lan.enabled`), every other key
    kept; 409 `settings_invalid` while the file cannot be read (core.settings_store)."""
    with settings_store.SETTINGS_LOCK:
        try:
            remote = dict(config.current_settings().raw.get("remote") or {})
        except config.SettingsError:
            remote = {}  # settings_update refuses with the file's own problem
        lan = dict(remote.get("lan") or {})
        lan["enabled"] = enabled
        return settings_store.settings_update(changes={"remote": {**remote, "lan": lan}})
