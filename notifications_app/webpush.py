"""Web Push (RFC 8030) to every subscribed browser, encrypted to the browser's keys (RFC 8291,
`aes128gcm`) and signed with svc's VAPID key (RFC 8292), through `pywebpush`.

The VAPID key pair is made the first time svc starts (or first needs it) and kept in
`$SVC_HOME/vapid_private.pem` (0600): browsers subscribe to one application server key, so it
must outlive restarts. A push service answering 404 or 410 says the browser dropped the
subscription: it is deleted, and that delivery fails without a retry.

Every send goes through `push_connect.PushSession`: the endpoint's host is resolved and checked
again as svc connects (public addresses only, or a host in `notifications.push_private_hosts`),
and no redirect is followed — an endpoint is a URL someone else chose (push_address.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import tempfile
import threading
from pathlib import Path

from channels.db import database_sync_to_async
from cryptography.hazmat.primitives import serialization
from py_vapid import Vapid02
from py_vapid.utils import b64urlencode

from core import config
from notifications_app import push_address
from notifications_app.models import PushSubscription
from notifications_app.targets import Message, Permanent, Target

KEY_FILE = "vapid_private.pem"
CLAIMS_SUB = "mailto:svc@localhost"  # RFC 8292 `sub`: a contact for the push service
TTL_S = 3600  # a phone asleep for up to an hour still gets it
BODY_MAX = 1000  # push services take ~4 kB of payload; titles and links need room too

_lock = threading.Lock()
_keys: dict[str, Vapid02] = {}


def key_path() -> Path:
    return config.svc_home() / KEY_FILE


def vapid() -> Vapid02:
    """svc's VAPID key, made on first use. Two processes making it at once keep the first
    one written (a hard link never replaces an existing file)."""
    path = key_path()
    with _lock:
        if (key := _keys.get(str(path))) is not None:
            return key
        if not path.exists():
            made = Vapid02()
            made.generate_keys()
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # 0600
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(made.private_pem())
                    fh.flush()
                    os.fsync(fh.fileno())
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, path)
            finally:
                Path(tmp).unlink(missing_ok=True)
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        key = Vapid02.from_file(str(path))
        _keys[str(path)] = key
        return key


def public_key() -> str:
    """The application server key browsers pass to `PushManager.subscribe` (base64url of the
    uncompressed P-256 point)."""
    point = vapid().public_key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return b64urlencode(point)


def targets(subscriptions: list[PushSubscription], timeout_s: float) -> list[Target]:
    return [
        Target(f"webpush:{s.pk}", _sender(s, timeout_s), prepare=_prepare) for s in subscriptions
    ]


async def _prepare() -> None:
    """pywebpush (with requests and http_ece, ~0.1 s) and aiohttp, the key and the TLS trust
    store, loaded off the loop."""
    await asyncio.to_thread(importlib.import_module, "pywebpush")
    await asyncio.to_thread(importlib.import_module, "notifications_app.push_connect")
    await asyncio.to_thread(vapid)
    await asyncio.to_thread(push_address.tls_context)


def _forget(subscription_id: int) -> None:
    PushSubscription.objects.filter(pk=subscription_id).delete()


def _sender(subscription: PushSubscription, timeout_s: float):  # type: ignore[no-untyped-def]
    info = {
        "endpoint": subscription.endpoint,
        "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth},
    }
    subscription_id = subscription.pk

    async def send(message: Message) -> None:
        # Not at the top: pywebpush (requests, http_ece) and aiohttp take ~0.5 s to import, which
        # svc's start does without; _prepare loaded them, off the loop, before the first send.
        import aiohttp
        import pywebpush

        from notifications_app import push_connect  # imports aiohttp at its top

        payload = message.payload()
        payload["body"] = payload["body"][:BODY_MAX]
        try:
            async with await push_connect.session() as session:
                await pywebpush.webpush_async(
                    subscription_info=info,
                    data=json.dumps(payload),
                    vapid_private_key=vapid(),
                    vapid_claims={"sub": CLAIMS_SUB},  # aud (the endpoint's origin) and exp added
                    content_encoding="aes128gcm",
                    timeout=timeout_s,
                    ttl=TTL_S,
                    # A retry replaces a copy the push service still holds (RFC 8030 §5.4).
                    headers={"Topic": message.id.replace("-", "")[:32]},
                    aiohttp_session=session,  # type: ignore[arg-type]  # pywebpush calls post only
                )
        except push_address.AddressRefused as exc:  # an IP literal or an http:// endpoint
            raise Permanent(f"not sent: {exc}") from None
        except aiohttp.ClientConnectorError as exc:  # a name resolved to nothing allowed
            if isinstance(exc.os_error, push_address.AddressRefused):
                raise Permanent(f"not sent: {exc.os_error}") from None
            raise
        except pywebpush.WebPushException as exc:
            status = getattr(getattr(exc, "response", None), "status", None)
            if status in (404, 410):  # gone: the browser unsubscribed, or it expired
                await database_sync_to_async(_forget)(subscription_id)
                raise Permanent(
                    f"the push service answered {status}: the subscription is gone (removed)"
                ) from None
            raise _failure(exc, status) from None

    return send


def _failure(exc: Exception, status: int | None) -> Exception:
    """The push service's answer as an error to record; the endpoint is never named (it is the
    browser's capability URL)."""
    if status is None:
        return Permanent(f"could not send: {getattr(exc, 'message', exc)}")
    if 300 <= status < 400:  # a redirect could point anywhere: never followed
        return Permanent(f"the push service answered {status}, a redirect; svc follows none")
    if 400 <= status < 500 and status not in (408, 429):
        return Permanent(f"the push service refused the message ({status})")
    return RuntimeError(f"the push service answered {status}")
