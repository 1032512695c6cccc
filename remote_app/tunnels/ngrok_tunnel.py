"""`ngrok`: in-process with ngrok's official Python SDK (contract §13), so there is no ngrok
binary to download or supervise. A session (the authtoken) carries one HTTP endpoint that forwards
to the remote listener; the SDK reconnects a dropped session by itself, so the tunnel runs until
it is cancelled, and cancelling closes the endpoint and the session."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from typing import Any

from core import network_words
from remote_app.tunnels.base import Options, TunnelError, Up

WHERE_TO_GET_ONE = "https://dashboard.ngrok.com/get-started/your-authtoken"
SERVICE_HOST = "connect.ngrok-agent.com"  # where the SDK opens its session
# The SDK's words (ngrok-rust's session.rs): a token refused, and no connection made at all.
_REFUSED_TOKEN = re.compile(r"authentication fail|authtoken|ERR_NGROK_(10[0-9]|4018)\b", re.I)
_NO_CONNECTION = re.compile(
    r"failed to establish tcp connection|tls handshake|connect through proxy", re.I
)


class NgrokTunnel:
    def __init__(self, name: str, raw: dict[str, Any], sdk: Any = None) -> None:
        options = Options(name, raw, {"authtoken_env", "authtoken_file", "domain"})
        self.key = options.key
        self.authtoken_env = options.text("authtoken_env", "NGROK_AUTHTOKEN")
        if not self.authtoken_env:
            raise TunnelError(f"{self.key('authtoken_env')}: must be a non-empty string")
        self.domain = options.text("domain", "")  # "" → a domain ngrok picks
        if self.domain and ("/" in self.domain or ":" in self.domain):
            raise TunnelError(f"{self.key('domain')}: a host name only, e.g. example.ngrok.app")
        self.sdk = sdk  # the `ngrok` module; a test passes a stand-in
        # A token pasted in the Remote view is kept in a 0600 file, never in settings.json.
        self.authtoken_file = os.path.expanduser(options.text("authtoken_file", ""))

    def _token_from_file(self) -> str:
        return _read_token(self.authtoken_file) if self.authtoken_file else ""

    async def run(self, port: int, up: Up) -> None:
        sdk = self.sdk or _sdk()
        token = os.environ.get(self.authtoken_env, "").strip() or self._token_from_file()
        if not token:
            raise TunnelError(
                f"{self.authtoken_env} is not set in svc's environment: put your ngrok authtoken "
                f"there (from {WHERE_TO_GET_ONE}), or name another variable in "
                f"{self.key('authtoken_env')}"
            )
        try:
            session = await sdk.SessionBuilder().authtoken(token).connect()
        except ValueError as exc:  # the SDK's error for a refused or unreachable session
            raise TunnelError(await self._no_session(exc)) from exc
        listener = None
        try:
            endpoint = session.http_endpoint()
            if self.domain:
                endpoint = endpoint.domain(self.domain)
            try:
                listener = await endpoint.listen_and_forward(f"http://127.0.0.1:{port}")
            except ValueError as exc:
                hint = f"; check {self.key('domain')}" if self.domain else ""
                raise TunnelError(f"ngrok refused the endpoint: {_said(exc)}{hint}") from exc
            up(listener.url())
            await asyncio.Event().wait()  # the SDK forwards in its own threads until cancelled
        finally:  # the endpoint first, so ngrok stops routing to it, then the session
            if listener is not None:
                with contextlib.suppress(ValueError):
                    await listener.close()
            with contextlib.suppress(ValueError):
                await session.close()

    async def _no_session(self, exc: ValueError) -> str:
        """Why the SDK made no session, in words: the token refused (an account's token is
        needed), or ngrok's service not reached — which its error does not say more of than
        "failed to establish tcp connection", so svc looks the name up itself."""
        said = _said(exc)
        if _REFUSED_TOKEN.search(said):
            return (
                f"ngrok refused the authtoken in {self.authtoken_env}: an ngrok account's "
                f"authtoken is needed (from {WHERE_TO_GET_ONE}); it said: {said}"
            )
        if _NO_CONNECTION.search(said):
            reason = await _reach(SERVICE_HOST)
            reached = network_words.cannot_reach(SERVICE_HOST, reason, "ngrok's service")
            return f"{reached} (ngrok said: {said})"
        return (
            f"ngrok: {said}; check the authtoken in {self.authtoken_env} and that this machine "
            "reaches ngrok"
        )


async def _reach(host: str) -> str:
    """What stops a connection to host:443, as far as a name lookup and a connect can tell."""
    try:
        async with asyncio.timeout(5):
            _, writer = await asyncio.open_connection(host, 443)
        writer.close()
    except Exception as exc:
        return network_words.reason_of(exc) or " ".join(str(exc).split()) or type(exc).__name__
    return "the connection failed (the name resolves and port 443 answers: a proxy?)"


def _sdk() -> Any:
    try:
        import ngrok  # here, so that a missing SDK is this tunnel's error, not svc's start's
    except ImportError as exc:
        raise TunnelError(
            "the ngrok Python SDK is not installed: `pip install ngrok` in svc's environment "
            "(it is in requirements.txt)"
        ) from exc
    return ngrok


def _said(exc: ValueError) -> str:
    """The SDK raises ValueError(what, why, …): one line of it."""
    return ": ".join(str(arg) for arg in exc.args) or type(exc).__name__


def _read_token(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""
