"""Why a tunnel's program failed, as a sentence a person can act on, read from the program's
own last lines (docs/tunnel-providers.md quotes what each real tool prints when it fails).

Two kinds of line are known: a network failure in any tool's wording (core/network_words: Node's
`getaddrinfo ENOTFOUND localtunnel.me`, Go's `lookup api.trycloudflare.com …: no such host`,
npm's `request to https://registry.npmjs.org/… failed, reason: …`), said as "cannot reach
<host> (<what it is>): <reason>"; and a tool's own words for a step the person must take (log in,
start a daemon, a token it refused), given per provider as `Known` patterns."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core import network_words
from core.network_words import Found

# What a host a tool needs is, for the sentence (a name alone says little to most people).
SERVICES = {
    "localtunnel.me": "localtunnel's server",
    "loca.lt": "localtunnel's server",
    "api.trycloudflare.com": "Cloudflare's quick-tunnel service",
    "argotunnel.com": "Cloudflare's edge",
    "registry.npmjs.org": "npm's registry, where npx gets localtunnel the first time",
    "controlplane.tailscale.com": "Tailscale's coordination server",
    "connect.ngrok-agent.com": "ngrok's service",
}
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z?\s+")  # zerolog's and `debug`'s line start


@dataclass(frozen=True)
class Known:
    """A tool's own failure: the line that says it, and what to do (`{0}`: the first group)."""

    pattern: re.Pattern[str]
    sentence: str


@dataclass(frozen=True)
class Reading:
    sentence: str  # what a person reads first
    line: str  # the line it was read from, quoted after it
    found: Found | None = None  # for a network failure: which (a repeat is the same failure)


def read(lines: Sequence[str], service: str, known: Sequence[Known] = ()) -> Reading | None:
    """The newest line that says why the tool failed, as a sentence; None when none does.
    `service`: the host the tool needs (named when its error gives only an address)."""
    for line in reversed(lines):
        reading = read_line(line, service, known)
        if reading is not None:
            return reading
    return None


def read_line(line: str, service: str, known: Sequence[Known] = ()) -> Reading | None:
    for k in known:
        if match := k.pattern.search(line):
            return Reading(k.sentence.format(*match.groups()), quoted(line))
    found = network_words.found_in(line)
    if found is None:
        return None
    return Reading(unreachable(found, service), quoted(line), found)


def unreachable(found: Found, service: str) -> str:
    host, reason = found.host, found.reason
    if not _is_name(host):  # an address or nothing: the service the tool needs is the one
        reason = f"{reason} ({host})" if host and host != service else reason
        host = service
    if not host:
        return f"cannot reach its server: {reason}"
    suffix = next((s for s in SERVICES if host == s or host.endswith("." + s)), "")
    if host.startswith("_") and suffix:  # a DNS SRV name (_v2-origintunneld._tcp.argotunnel.com)
        host = suffix
    return network_words.cannot_reach(host, reason, SERVICES.get(suffix, ""))


def quoted(line: str, most: int = 160) -> str:
    line = _TIMESTAMP.sub("", line)
    return line if len(line) <= most else line[: most - 3] + "..."


def _is_name(host: str) -> bool:
    """A host name, not an address (`127.0.0.1:1`, `[::1]:443`) or nothing."""
    bare = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return bool(bare) and not re.fullmatch(r"[\d.]+|\[?[0-9a-fA-F:]+\]?(:\d+)?", bare)


# --- the tools' own words -----------------------------------------------------------------------


def cloudflared_known(token_env: str = "") -> list[Known]:
    if not token_env:
        return []
    again = f"copy the tunnel's token into ${token_env} again (Cloudflare dashboard → Tunnels)"
    invalid = re.compile(r"Provided Tunnel token is not valid")  # tunnel/subcommands.go:784
    refused = re.compile(r"\bUnauthorized\b")  # supervisor/supervisor.go:276
    return [
        Known(invalid, f"Cloudflare: not a valid tunnel token; {again}"),
        Known(refused, f"Cloudflare refused the tunnel's token; {again}"),
    ]


TAILSCALE_KNOWN = [  # cmd/tailscale/cli/diag.go:48-63, client/local/local.go:199
    Known(
        re.compile(r"failed to connect to local (?:tailscaled|Tailscale service)"),
        "tailscaled is not running on this machine: start it (sudo systemctl start tailscaled), "
        "then log in with `tailscale up` (a Tailscale account is needed)",
    ),
    Known(
        re.compile(r"Access denied"),
        "tailscaled refused svc's user: run `sudo tailscale set --operator=$USER` once",
    ),
    # The server's text for a tailnet without Funnel ends with the link that enables it.
    Known(
        re.compile(r"(https://login\.tailscale\.com/\S+)"),
        "Funnel is not enabled for this tailnet (or this machine must log in): open {0}",
    ),
]
