"""Backpressure under a flood (issue 4, acceptance 2): a reading viewer gets every byte, a viewer
that reads nothing never holds the PTY back, memory stays bounded and Ctrl-C still works."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.daemon import IGNORING_SIGNALS, Daemon
from harness.termclient import Term, create_session, start_hosting_daemon, stop_session

FLOOD = "head -c 15000000 /dev/urandom | base64"  # 20.3 MB of output


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """Started the way `nohup make run &` starts it: SIGHUP, SIGINT and SIGQUIT ignored — which
    its terminals' jobs must not inherit, or Ctrl-C would do nothing."""
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-flood"), wrapper=IGNORING_SIGNALS)
    yield server
    server.stop()


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def watch_peak_rss(pid: int, peak: list[int]) -> None:
    while True:
        peak[0] = max(peak[0], rss_bytes(pid))
        await asyncio.sleep(0.02)


def session_commands(sid: int) -> list[str]:
    names = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                head, tail = (proc / "stat").read_text().rsplit(")", 1)
                fields = tail.split()
                if fields[0] != "Z" and int(fields[3]) == sid:
                    names.append(head.split("(", 1)[1])
    return names


def session_states(sid: int) -> list[str]:
    """name, state, what it waits in and its signal masks: why a process has not ended."""
    states = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                head, tail = (proc / "stat").read_text().rsplit(")", 1)
                if int(tail.split()[3]) == sid:
                    status = (proc / "status").read_text().splitlines()
                    sig = [x for x in status if x.startswith(("SigBlk", "SigIgn", "SigPnd"))]
                    wchan = (proc / "wchan").read_text()
                    states.append(f"{head.split('(', 1)[1]} {tail.split()[0]} {wchan} {sig}")
    return states


async def test_flood_reaches_a_reading_viewer_intact_while_another_reads_nothing(
    host: Daemon, tmp_path: Path
) -> None:
    session = create_session(host, tmp_path)
    reader = await Term.open(host, session["id"])
    stalled = await Term.open(host, session["id"], max_queue=1)  # reads nothing from here on
    copy = tmp_path / "flood.txt"
    await reader.run("stty -onlcr")
    await reader.expect(b"stty -onlcr")
    baseline = rss_bytes(host.proc.pid)
    peak = [baseline]
    watcher = asyncio.create_task(watch_peak_rss(host.proc.pid, peak))
    await reader.run(f"printf '\\001BEGIN\\001'; {FLOOD} | tee {copy}; printf '\\001END\\001'")
    start = await reader.expect(b"\x01BEGIN\x01", timeout=60)  # the daemon may be busy
    # 20 MB through a PTY and a socket: seconds alone, minutes on two cores shared with 4 workers
    end = await reader.expect(b"\x01END\x01", timeout=180) - len(b"\x01END\x01")
    watcher.cancel()
    received = bytes(reader.out[start:end])
    produced = copy.read_bytes()
    assert len(produced) > 20_000_000
    assert hashlib.sha256(received).hexdigest() == hashlib.sha256(produced).hexdigest()
    growth = peak[0] - baseline
    assert growth < 16 << 20, f"daemon grew by {growth / 1e6:.1f} MB during a 20 MB flood"
    # The stalled viewer skipped ahead; once it reads again it is told how much it missed.
    skipped = await stalled.expect_event("skipped", timeout=20)
    assert skipped["bytes"] > 0
    await reader.run("echo after-$((7*3))")
    await stalled.expect(b"after-21")
    await reader.close()
    await stalled.close()
    stop_session(host, session["id"])


async def test_ctrl_c_mid_flood_stops_the_producer(host: Daemon, tmp_path: Path) -> None:
    """Ctrl-C reaches the foreground job through a PTY full of output. How fast is a benchmark
    (bench/terminal.py); here only that it happens, with a deadline far above any machine."""
    session = create_session(host, tmp_path)
    term = await Term.open(host, session["id"])
    await term.run("head -c 3000000000 /dev/urandom | base64")
    while len(term.out) < 2_000_000:
        await term.read_frame()
    assert "base64" in session_commands(session["pid"])
    await term.ws.send(b"\x03")
    deadline = time.monotonic() + 30
    reading = asyncio.create_task(_drain(term))
    while {"head", "base64"} & set(session_commands(session["pid"])):
        assert time.monotonic() < deadline, (
            "the producer still runs 30 s after Ctrl-C: "
            f"{session_states(session['pid'])}; read {len(term.out)} bytes; daemon log: "
            f"{host.log_path.read_text(errors='replace')[-2000:]}"
        )
        await asyncio.sleep(0.01)
    # The terminal is usable again: the next command runs and prints.
    await term.ws.send(b"echo stopped-$((3*3))\r")
    await asyncio.wait_for(reading, 5)
    await term.close()
    stop_session(host, session["id"])


async def _drain(term: Term) -> None:
    await term.expect(b"stopped-9", timeout=5)


async def test_a_new_viewer_of_a_flooding_session_gets_the_tail_and_its_state_at_once(
    host: Daemon, tmp_path: Path
) -> None:
    """Security finding 4: while `yes` runs with nobody watching, a new viewer still gets the
    scrollback tail and the state frame first, then live output."""
    session = create_session(host, tmp_path)
    starter = await Term.open(host, session["id"])
    await starter.run("yes flood-line")
    await starter.expect(b"flood-line\r\nflood-line")
    await starter.close()  # nobody watches now; the PTY floods on
    await asyncio.sleep(1)
    viewer = await Term.open(host, session["id"])  # the scrollback, then the state frame
    assert b"flood-line" in viewer.scrollback and len(viewer.scrollback) <= 2 << 20
    assert viewer.state == {"type": "running"}
    await viewer.read_frame()
    assert b"flood-line" in viewer.out  # live output follows
    await viewer.ws.send(b"\x03")
    await viewer.close()
    stop_session(host, session["id"])
