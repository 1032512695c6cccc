"""A local Web Push service, strict like a real one: a real aiohttp server on a loopback port (its
own thread and loop, as harness/fakes/fake_provider.py), speaking TLS with a certificate from a
throw-away CA (`PushCA`, made with trustme) as push services do — svc sends Web Push over
https only and trusts the CA as any deployment trusts a private one, through SSL_CERT_FILE.
It

- verifies the VAPID signature of every request (RFC 8292): `Authorization: vapid t=<JWT>,
  k=<public key>`, an ES256 JWT signed by `k`, `aud` the endpoint's origin, `exp` in the future
  and at most 24 h away, a `sub` contact;
- decrypts the body (RFC 8291, `Content-Encoding: aes128gcm`) with the subscription's own ECDH
  private key and auth secret — made by the test as a browser makes them — and records the
  payload;
- answers per subscription as told: 201, 410 (gone), 500, a redirect to `location`, or not
  before `slow_s` seconds;
- counts every TCP connection it accepts and records every request's path, so a test can say
  that svc connected nowhere.

`subscribe(name)` returns what `PushManager.subscribe()` gives a page: endpoint and keys.
`PushEndpoint()` without a CA serves plain http (a "push service" svc must refuse, or the
server a redirect points to).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import ssl
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import http_ece
import trustme
from aiohttp import web
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

# The names the fake's certificate is good for: loopback in every spelling svc must refuse (so
# that code without the address rule would really reach the fake, and a test of the rule can
# fail), and the names tests resolve to loopback themselves (tests/notifications_app/conftest.py).
CERT_NAMES = (
    "127.0.0.1",
    "::1",
    "::ffff:127.0.0.1",
    "0.0.0.0",
    "localhost",
    "push.example.test",
    "push.loopback.test",
    "push.rebind.test",
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# What settings.json needs for svc to send to the fake: 127.0.0.1 is a private address.
PRIVATE_HOSTS = ["127.0.0.1"]


def with_private_hosts(
    settings: dict[str, Any], hosts: list[str] = PRIVATE_HOSTS
) -> dict[str, Any]:
    """`settings` with notifications.push_private_hosts set to `hosts`."""
    return {
        **settings,
        "notifications": {**settings.get("notifications", {}), "push_private_hosts": hosts},
    }


class PushCA:
    """A throw-away certificate authority and the fake's certificate; `cert_file` is the CA's
    PEM, for SSL_CERT_FILE."""

    def __init__(self, folder: Path) -> None:
        self.ca = trustme.CA()
        self.cert_file = folder / "push-ca.pem"
        self.ca.cert_pem.write_to_path(str(self.cert_file))
        self._server = self.ca.issue_cert(*CERT_NAMES)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._server.configure_cert(context)
        return context


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class ThreadedApp:
    """An aiohttp app served on 127.0.0.1 from a thread of its own, so the test's event loop
    (and svc's, in process) never serves it; over TLS when given a server context."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.port = 0
        self.tls = tls
        self.loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None
        self.released = threading.Event()  # ends every slow answer (at stop)
        self.connections = 0  # TCP connections accepted, TLS handshake or not
        self.requests: list[str] = []  # every request's method and path, routed or not

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def app(self) -> web.Application:
        raise NotImplementedError

    def start(self) -> ThreadedApp:
        """Serve on `port` when one was set before (a target that was down comes up where it
        was expected), else on a free one."""
        if not self.port:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.port = sock.getsockname()[1]
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        assert ready.wait(10), "the fake server did not start"
        return self

    def _serve(self, ready: threading.Event) -> None:
        self.loop = asyncio.new_event_loop()
        app = self.app()

        @web.middleware
        async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
            self.requests.append(f"{request.method} {request.path}")
            return await handler(request)

        app.middlewares.append(record)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        self.loop.run_until_complete(self._runner.setup())
        handler = self._runner.server
        assert handler is not None

        def counted() -> asyncio.Protocol:  # a TCPSite would not say what it accepted
            self.connections += 1
            return handler()

        self._server = self.loop.run_until_complete(
            self.loop.create_server(counted, "127.0.0.1", self.port, ssl=self.tls)
        )
        ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        self.released.set()
        if self.loop and self._runner and self._server:
            self._server.close()
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)

    async def pause(self, seconds: float) -> None:
        """Sleep, but not past stop()."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.released.is_set():
            await asyncio.sleep(0.02)


@dataclass
class Browser:
    """A subscription's key material, as a browser makes it (RFC 8291 §2)."""

    name: str
    private_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    auth: bytes = field(default_factory=lambda: os.urandom(16))
    answer: int = 201  # 201, or the status to answer with (410, 500, 307, …)
    slow_s: float = 0.0  # wait this long before answering
    location: str = ""  # where a 3xx answer points

    def keys(self) -> dict[str, str]:
        point = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {"p256dh": b64url(point), "auth": b64url(self.auth)}


@dataclass
class Received:
    name: str
    payload: dict[str, Any]
    claims: dict[str, Any]
    vapid_key: str  # the `k` the request was signed with
    headers: dict[str, str]


class VapidError(Exception):
    pass


def verify_vapid(authorization: str, origin: str) -> tuple[dict[str, Any], str]:
    """RFC 8292 §2–3: the claims and the public key, or VapidError saying what is wrong."""
    scheme, _, params = authorization.partition(" ")
    if scheme.lower() != "vapid":
        raise VapidError(f"scheme {scheme!r}, not vapid")
    parts = dict(p.strip().split("=", 1) for p in params.split(",") if "=" in p)
    if "t" not in parts or "k" not in parts:
        raise VapidError("t= or k= missing")
    token, key = parts["t"], parts["k"]
    try:
        head_b64, claims_b64, sig_b64 = token.split(".")
        header = json.loads(b64url_decode(head_b64))
        claims = json.loads(b64url_decode(claims_b64))
        signature = b64url_decode(sig_b64)
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url_decode(key))
    except ValueError as exc:
        raise VapidError(f"malformed: {exc}") from exc
    if header.get("alg") != "ES256" or len(signature) != 64:
        raise VapidError("not an ES256 JWT")
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    try:
        public.verify(
            encode_dss_signature(r, s),
            f"{head_b64}.{claims_b64}".encode(),
            ec.ECDSA(hashes.SHA256()),
        )
    except InvalidSignature as exc:
        raise VapidError("the signature does not match k") from exc
    now = time.time()
    if claims.get("aud") != origin:
        raise VapidError(f"aud {claims.get('aud')!r} is not {origin!r}")
    if not now < float(claims.get("exp", 0)) <= now + 86400 + 60:
        raise VapidError(f"exp {claims.get('exp')!r} is not within the next 24 h")
    if not str(claims.get("sub", "")).startswith(("mailto:", "https:")):
        raise VapidError("no sub contact")
    return claims, key


class PushEndpoint(ThreadedApp):
    def __init__(self, ca: PushCA | None = None) -> None:
        super().__init__(ca.server_context() if ca else None)
        self.browsers: dict[str, Browser] = {}
        self.received: list[Received] = []
        self.rejected: list[str] = []  # why requests were refused (VAPID, decryption)
        self.attempts: dict[str, int] = {}

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/push/{name}", self.handle)
        return app

    def subscribe(self, name: str, **behaviour: Any) -> dict[str, Any]:
        """What `PushManager.subscribe()` hands the page (then POSTed to svc)."""
        browser = Browser(name, **behaviour)
        self.browsers[name] = browser
        return {"endpoint": f"{self.url}/push/{name}", "keys": browser.keys()}

    def payloads(self, name: str) -> list[dict[str, Any]]:
        return [r.payload for r in self.received if r.name == name]

    async def handle(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.attempts[name] = self.attempts.get(name, 0) + 1
        browser = self.browsers.get(name)
        if browser is None:
            return web.Response(status=404)
        body = await request.read()
        if browser.slow_s:
            await self.pause(browser.slow_s)
        if browser.answer != 201:
            moved = {"Location": browser.location} if browser.location else {}
            return web.Response(status=browser.answer, text="told to fail", headers=moved)
        try:
            claims, key = verify_vapid(request.headers.get("Authorization", ""), self.url)
        except VapidError as exc:
            self.rejected.append(f"vapid: {exc}")
            return web.Response(status=401, text=str(exc))
        if request.headers.get("Content-Encoding") != "aes128gcm":
            self.rejected.append(f"encoding {request.headers.get('Content-Encoding')!r}")
            return web.Response(status=415)
        try:
            plain = http_ece.decrypt(
                body,
                private_key=browser.private_key,
                auth_secret=browser.auth,
                version="aes128gcm",
            )
        except Exception as exc:
            self.rejected.append(f"decrypt: {exc!r}")
            return web.Response(status=400)
        self.received.append(Received(name, json.loads(plain), claims, key, dict(request.headers)))
        return web.Response(status=201)
