"""Who holds a TCP port svc could not bind: another svc (and whether it uses this `$SVC_HOME`),
or another program — said in the one line svc exits with (docs/service.md).

Two looks, neither sending a credential anywhere:
- svc answers a browser's `GET /` on 127.0.0.1 with a redirect to its own dashboard host
  (`svc-<random>.localhost:{port}`, core.browser.dashboard_redirect). That name is recognised as
  svc's, and compared with this home's `browser_host` to tell "this same home" apart.
- On Linux, `/proc/net/tcp*` names the listening socket's inode and `/proc/<pid>/fd` the process
  that holds it (only this user's processes are readable: another user's shows no pid). Its
  environment is not read: a process may have changed it since it started.
"""

from __future__ import annotations

import http.client
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cli.home import BROWSER_HOST

PROBE_SECONDS = 2.0
LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's `st` column


@dataclass(frozen=True)
class Owner:
    is_svc: bool = False
    browser_host: str = ""  # the other svc's dashboard host, when it is svc
    pid: int | None = None
    program: str = ""  # the process's name (/proc/<pid>/comm)


def probe_svc(port: int, timeout: float = PROBE_SECONDS) -> str | None:
    """The dashboard host of the svc answering on 127.0.0.1:port; None when what answers (if
    anything) is not svc."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/", headers={"Accept": "text/html", "Host": f"127.0.0.1:{port}"})
        response = conn.getresponse()
        location = response.getheader("Location") or ""
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    found = re.match(r"^http://([^/:]+):(\d+)/$", location)
    if response.status in (301, 302) and found and BROWSER_HOST.match(found.group(1)):
        return found.group(1)
    return None


def listening_inodes(port: int, proc: Path = Path("/proc")) -> set[str]:
    inodes: set[str] = set()
    for table in ("net/tcp", "net/tcp6"):
        try:
            rows = (proc / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if (
                len(fields) > 9
                and fields[3] == LISTEN
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                inodes.add(fields[9])
    return inodes


def pid_holding(inodes: set[str], proc: Path = Path("/proc")) -> int | None:
    wanted = {f"socket:[{inode}]" for inode in inodes}
    if not wanted:
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in wanted:
                    return int(entry.name)
        except OSError:  # another user's process, or one that has just ended
            continue
    return None


def process_name(pid: int, proc: Path = Path("/proc")) -> str:
    try:
        return (proc / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def owner_of(port: int) -> Owner:
    browser_host = probe_svc(port)
    pid = pid_holding(listening_inodes(port))
    program = process_name(pid) if pid else ""
    return Owner(browser_host is not None, browser_host or "", pid, program)


def port_in_use_line(
    port: int, interface: str, own_browser_host: str, own_home: str, owner: Owner | None = None
) -> str:
    """The one line svc exits with when its port is taken."""
    owner = owner if owner is not None else owner_of(port)
    where = f"port {port}" + (f" on {interface}" if interface else "")
    pid = f"pid {owner.pid}" if owner.pid else ""
    if owner.is_svc:
        same = owner.browser_host == own_browser_host
        facts = ", ".join(part for part in (pid, f"SVC_HOME {own_home}" if same else "") if part)
        whose = "another svc of this same SVC_HOME" if same else "another svc"
        what = f"{whose}" + (f" ({facts})" if facts else "")
        hint = (
            "it is already running: `bin/svc url` prints its login URL"
            if same
            else "stop it, or start this one on another port: `bin/svc run --port N`"
        )
        return f"svc: cannot start: {where} is in use by {what}; {hint}"
    named = ", ".join(part for part in (pid, owner.program) if part)
    what = "another program" + (f" ({named})" if named else "")
    return (
        f"svc: cannot start: {where} is already in use by {what}; stop it, or start svc on "
        f"another port: `bin/svc run --port N` (or `make run PORT=N`)"
    )
