"""Tunnels run by an executable (contract §13): `cloudflared`, `tailscale funnel`, `localtunnel`
(through npx) and `command`. One way runs them all: spawn the tool in its own process group, read
its stdout and stderr line by line until the public URL (and, where the URL comes before the
tunnel forwards, the line saying it is connected) shows up, then wait on it. What each real tool
prints, and where in its source that was read, is in docs/tunnel-providers.md."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from remote_app.tunnels import failures
from remote_app.tunnels.base import Options, TunnelError, Up
from remote_app.tunnels.failures import Known, Reading

URL_TIMEOUT_S = 30.0
KILL_AFTER_S = 3.0  # SIGTERM lets a tool deregister; whatever is left after this gets SIGKILL
# A tool that says it cannot reach its service this many times in a row, before any URL, is
# retrying by itself (localtunnel does, every second, for ever): svc stops it and says why
# rather than wait out url_timeout_s; the supervisor tries again with backoff.
GIVE_UP_AFTER = 5

# The quick tunnel's URL, printed inside a box; `api.trycloudflare.com` shows up in its errors.
CLOUDFLARED_URL = re.compile(r"https://(?!api\.)[a-z0-9-]+\.trycloudflare\.com")
# An edge connection is up, in its wording now and before 2022.8 (`Connection <id> registered`).
CLOUDFLARED_READY = re.compile(r"Registered tunnel connection|Connection [0-9a-f-]+ registered")
# The funnel's URL on the node's MagicDNS name, not the login.tailscale.com link to enable Funnel.
TAILSCALE_URL = re.compile(r"https://[A-Za-z0-9.-]+\.ts\.net(?::\d+)?")
LOCALTUNNEL_URL = re.compile(r"your url is: (https?://\S+)")  # any server's, not only loca.lt
ANY_URL = r"https?://[^\s\"'<>]+"  # `command` without a url_pattern

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ERRORISH = re.compile(r"(?i)\b(err|error|fatal|failed|denied|refused|invalid)\b")


@dataclass
class ProcessTunnel:
    provider: str  # how messages name the tool
    argv: list[str]  # argv[0] is looked up on PATH; "{port}" in any argument is the remote port
    url: re.Pattern[str] | str  # where to find the public URL in its output, or the URL itself
    missing: str  # the error when argv[0] is not on PATH: how to install it
    ready: re.Pattern[str] | None = None  # the line saying it forwards, when the URL line does not
    ready_text: str = ""
    secret: tuple[str, str, str] | None = None  # (child's env var, svc's env var, how to get it)
    url_timeout_s: float = URL_TIMEOUT_S
    kill_after_s: float = KILL_AFTER_S
    service: str = ""  # the host it needs, named when its error names only an address
    known: tuple[Known, ...] = ()  # its own words for a step the person must take
    env: tuple[tuple[str, str], ...] = ()  # more of the child's environment

    async def run(self, port: int, up: Up) -> None:
        exe = shutil.which(self.argv[0])
        if exe is None:
            raise TunnelError(self.missing)
        env = dict(os.environ)
        if self.secret:  # by environment, not argv: other users can read a command line
            child_var, var, how = self.secret
            if not os.environ.get(var, "").strip():
                raise TunnelError(f"{var} is not set in svc's environment: {how}")
            env[child_var] = os.environ[var].strip()
        env.update(self.env)
        try:
            proc = await asyncio.create_subprocess_exec(
                exe,
                *(arg.replace("{port}", str(port)) for arg in self.argv[1:]),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                start_new_session=True,  # its own process group: npx → node, a shell → its tool
            )
        except OSError as exc:  # on PATH but cannot run (not a program, no permission)
            raise TunnelError(f"cannot run {exe}: {exc.strerror or exc}") from exc
        out = _Output(proc)
        try:
            try:
                url = await asyncio.wait_for(self._until_up(out), self.url_timeout_s)
            except TimeoutError:
                raise TunnelError(self._not_up(out)) from None
            out.waiting = False
            up(url)
            await out.exited
            raise TunnelError(self._exited(out))
        finally:
            await _end(proc, self.kill_after_s)
            await out.close()

    async def _until_up(self, out: _Output) -> str:
        url = self.url if isinstance(self.url, str) else ""
        ready = self.ready is None
        repeats: list[Reading] = []  # the same network failure, said again and again
        while not (url and ready):
            line = await out.lines.get()
            if line is None:  # the process ended before it was up
                raise TunnelError(self._exited(out))
            if not url and isinstance(self.url, re.Pattern):
                url = out.url = _url(self.url.search(line))
            if self.ready is not None and self.ready.search(line):
                ready = True
            reading = failures.read_line(line, self.service, self.known)
            if reading is None or reading.found is None:
                continue
            if repeats and repeats[-1].found != reading.found:
                repeats.clear()
            repeats.append(reading)
            if len(repeats) >= GIVE_UP_AFTER and not url:
                raise TunnelError(_said(reading, f"{self.provider} kept trying"))
        return url

    def _reading(self, out: _Output) -> Reading | None:
        return failures.read(list(out.tail), self.service, self.known)

    def _not_up(self, out: _Output) -> str:
        within = f"within {self.url_timeout_s:g} s"
        if isinstance(self.url, str) or out.url:
            what = f"{self.provider} did not say {self.ready_text} {within}"
        else:
            what = f"{self.provider} printed no URL {within}"
        reading = self._reading(out)
        return _said(reading, what) if reading else f"{what} ({out.said()})"

    def _exited(self, out: _Output) -> str:
        code = out.proc.returncode
        how = f"was killed by signal {-code}" if code and code < 0 else f"exited with code {code}"
        reading = self._reading(out)
        if reading:
            return _said(reading, f"{self.provider} {how}")
        return f"{self.provider} {how} ({out.said()})"


def _said(reading: Reading, what: str) -> str:
    """The sentence first, then what the tool did and the line it was read from."""
    return f"{reading.sentence} ({what}; it said: {reading.line})"


class _Output:
    """One run's output: its lines in order until the tunnel is up, then only the last few (for
    the error when it ends), so a tool that logs for days does not fill memory."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc, self.waiting, self.url = proc, True, ""
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.tail: deque[str] = deque(maxlen=10)
        self.readers = [asyncio.ensure_future(self._read(s)) for s in (proc.stdout, proc.stderr)]
        self.exited = asyncio.ensure_future(self._wait())

    async def _read(self, stream: asyncio.StreamReader | None) -> None:
        assert stream is not None
        while True:
            try:
                raw = await stream.readline()
            except ValueError:  # a line over the buffer limit: asyncio dropped it, read on
                continue
            if not raw:
                return
            line = " ".join(_ANSI.sub("", raw.decode(errors="replace")).split())
            if line:
                self.tail.append(line)
                if self.waiting:
                    self.lines.put_nowait(line)

    async def _wait(self) -> None:
        await self.proc.wait()
        # Its last lines usually say why it ended; a child still holding the pipes must not hang us.
        await asyncio.wait(self.readers, timeout=1.0)
        self.lines.put_nowait(None)

    def said(self) -> str:
        """The line a person needs: the last error-looking one among the last few, else the last
        (a Node crash ends with its version line, cloudflared with its shutdown lines)."""
        if not self.tail:
            return "it printed nothing"
        line = next((t for t in reversed(self.tail) if _ERRORISH.search(t)), self.tail[-1])
        return "it said: " + failures.quoted(line, 200)

    async def close(self) -> None:
        for task in (*self.readers, self.exited):
            task.cancel()
        await asyncio.gather(*self.readers, self.exited, return_exceptions=True)


def _url(found: re.Match[str] | None) -> str:
    """The first group if the pattern has one (`your url is: (…)`), else the whole match."""
    if found is None:
        return ""
    return ((found.group(1) if found.re.groups else found.group(0)) or "").rstrip("/")


async def _end(proc: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM the whole group; SIGKILL what is left once the leader is gone or after the grace.
    (Waiting on the leader, not on the group: an orphan nobody reaps would look alive for ever.)"""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), grace)
    finally:  # also when cancelled again while waiting
        _signal_group(proc.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), grace)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


# ---- the providers -------------------------------------------------------------------------


def build(name: str, raw: dict[str, Any]) -> ProcessTunnel:
    builders = {
        "cloudflared": _cloudflared,
        "tailscale": _tailscale,
        "localtunnel": _localtunnel,
        "command": _command,
    }
    provider = raw.get("provider")
    if provider not in builders:
        raise TunnelError(f"tunnels.{name}.provider: not a process tunnel ({provider!r})")
    return builders[provider](name, raw)


def _cloudflared(name: str, raw: dict[str, Any]) -> ProcessTunnel:
    options = Options(name, raw, {"token_env", "public_url", "url_timeout_s"})
    timeout = options.seconds("url_timeout_s", URL_TIMEOUT_S)
    missing = (
        "cloudflared is not installed (not on PATH): install it from https://developers."
        "cloudflare.com/cloudflare-one/connections/connect-networks/downloads/"
    )
    ready = "a connection registered ('Registered tunnel connection')"
    origin = "http://127.0.0.1:{port}"
    if "token_env" not in raw:  # a quick tunnel: no account, a random trycloudflare.com name
        if "public_url" in raw:
            raise TunnelError(
                f"{options.key('public_url')}: only for a named tunnel; set "
                f"{options.key('token_env')} too, or remove it for a quick tunnel"
            )
        argv = ["cloudflared", "tunnel", "--no-autoupdate", "--url", origin]
        return ProcessTunnel(
            "cloudflared",
            argv,
            CLOUDFLARED_URL,
            missing,
            CLOUDFLARED_READY,
            ready,
            url_timeout_s=timeout,
            service="api.trycloudflare.com",  # cmd/cloudflared/tunnel/cmd.go:872-876
        )
    # A named tunnel: its hostname is set up at Cloudflare, so the URL is an option; `--url`
    # routes a CLI-made tunnel to svc, a dashboard-made one takes its routes from the dashboard.
    token_env, public_url = options.text("token_env"), _http_url(options, "public_url")
    how = (
        "the token is in the Cloudflare dashboard (Zero Trust → Networks → Tunnels → your "
        "tunnel's install command) or `cloudflared tunnel token NAME`"
    )
    argv = ["cloudflared", "tunnel", "--no-autoupdate", "run", "--url", origin]
    return ProcessTunnel(
        "cloudflared",
        argv,
        public_url,
        missing,
        CLOUDFLARED_READY,
        ready,
        ("TUNNEL_TOKEN", token_env, how),
        timeout,
        service="argotunnel.com",  # the edge's SRV records: edgediscovery/allregions
        known=tuple(failures.cloudflared_known(token_env)),
    )


def _tailscale(name: str, raw: dict[str, Any]) -> ProcessTunnel:
    options = Options(name, raw, {"https_port", "url_timeout_s"})
    https_port = options.port("https_port", 443)
    if https_port not in (443, 8443, 10000):
        raise TunnelError(f"{options.key('https_port')}: Funnel serves only 443, 8443 or 10000")
    # Foreground (no --bg): the funnel lasts as long as the process, so ending it ends the funnel.
    argv = ["tailscale", "funnel", f"--https={https_port}", "http://127.0.0.1:{port}"]
    missing = (
        "tailscale is not installed (not on PATH): install it (https://tailscale.com/"
        "download), run `tailscale up`, and allow Funnel (https://tailscale.com/kb/1223/"
        "funnel)"
    )
    timeout = options.seconds("url_timeout_s", URL_TIMEOUT_S)
    return ProcessTunnel(
        "tailscale funnel",
        argv,
        TAILSCALE_URL,
        missing,
        url_timeout_s=timeout,
        service="controlplane.tailscale.com",
        known=tuple(failures.TAILSCALE_KNOWN),
    )


def _localtunnel(name: str, raw: dict[str, Any]) -> ProcessTunnel:
    options = Options(name, raw, {"host", "url_timeout_s"})
    # --yes: npx must not stop to ask whether to download localtunnel.
    argv = ["npx", "--yes", "localtunnel", "--port", "{port}"]
    server = "localtunnel.me"  # lib/Tunnel.js: the default --host
    if "host" in raw:
        argv += ["--host", _http_url(options, "host")]
        server = urlsplit(argv[-1]).netloc
    missing = (
        "npx is not installed (not on PATH): localtunnel runs with npx, which comes with "
        "Node.js (https://nodejs.org/en/download)"
    )
    timeout = options.seconds("url_timeout_s", URL_TIMEOUT_S)
    return ProcessTunnel(
        "localtunnel",
        argv,
        LOCALTUNNEL_URL,
        missing,
        url_timeout_s=timeout,
        service=server,
        # While its server cannot be reached it retries every second and prints nothing; its
        # `debug` lines say why ("tunnel server offline: getaddrinfo ENOTFOUND …").
        env=(("DEBUG", "localtunnel:client"),),
    )


def _command(name: str, raw: dict[str, Any]) -> ProcessTunnel:
    options = Options(name, raw, {"command", "url_pattern", "url_timeout_s"})
    argv = options.argv("command")
    pattern = options.pattern("url_pattern", ANY_URL)
    missing = f"{options.key('command')}: {argv[0]!r} was not found on PATH"
    timeout = options.seconds("url_timeout_s", URL_TIMEOUT_S)
    return ProcessTunnel(os.path.basename(argv[0]), argv, pattern, missing, url_timeout_s=timeout)


def _http_url(options: Options, option: str) -> str:
    value = options.text(option)
    if not re.match(r"https?://[^\s/]+", value):
        raise TunnelError(f"{options.key(option)}: must be an http:// or https:// URL")
    return value.rstrip("/")
