"""Command-line wall time: `bin/svc status` (the fast client, no Django) beside `manage.py status`
(the Django path every command took before) and `curl` of one of the endpoints `status` reads,
same daemon, same run.

`status` makes three requests (sessions, agents, integrations); curl makes one
(`GET /api/sessions` with the owner's bearer token), so curl is the floor of a process that
starts, connects and prints — not of three requests. Each command runs to completion before the
next starts; wall time is measured around the whole process (fork, exec, exit).
Bar (the issue): the common commands "well under a second".

    .venv/bin/python bench/cli.py        (make bench runs it with a temp SVC_HOME)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support.machine import percentile  # noqa: E402
from harness.daemon import Daemon, migrated_home  # noqa: E402

FAST_RUNS = int(os.environ.get("BENCH_CLI_RUNS", "20"))
DJANGO_RUNS = int(os.environ.get("BENCH_CLI_DJANGO_RUNS", "5"))
BAR_S = 0.5  # "well under a second"


def wall_times(command: list[str], env: dict[str, str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, timeout=120)
        times.append(time.perf_counter() - started)
        assert done.returncode == 0, done.stderr.decode(errors="replace")
    return times


def main() -> None:
    curl = shutil.which("curl")
    if curl is None:
        raise SystemExit("bench/cli.py needs curl")
    home = migrated_home(Path(tempfile.mkdtemp(prefix="svc-bench-cli-")) / "home")
    daemon = Daemon(home).start()
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
        env["SVC_HOME"] = str(home)
        header = f"Authorization: Bearer {daemon.owner_token}"
        commands = {
            "bin/svc status": ([str(ROOT / "bin" / "svc"), "status"], FAST_RUNS),
            "manage.py status": ([sys.executable, str(ROOT / "manage.py"), "status"], DJANGO_RUNS),
            "curl /api/sessions": ([curl, "-sf", "-H", header, f"{daemon.url}/api/sessions"],
                                   FAST_RUNS),
        }  # fmt: skip
        for command, _ in commands.values():  # warm the page cache and the daemon's first request
            wall_times(command, env, 1)
        results = {name: wall_times(cmd, env, runs) for name, (cmd, runs) in commands.items()}
    finally:
        daemon.stop()
    report(results)


def report(results: dict[str, list[float]]) -> None:
    floor = statistics.median(results["curl /api/sessions"])
    print(f"{'command':<20} {'n':>3} {'p50 ms':>9} {'p99 ms':>9} {'p50 / curl':>11}")
    for name, times in results.items():
        p50, p99 = statistics.median(times), percentile(times, 0.99)
        ms = f"{p50 * 1000:9.1f} {p99 * 1000:9.1f}"
        print(f"{name:<20} {len(times):>3} {ms} {p50 / floor:10.1f}×")
    fast = statistics.median(results["bin/svc status"])
    old = statistics.median(results["manage.py status"])
    print(f"  bin/svc status: {old / fast:.0f}× faster than manage.py status; bar p50 ≤ {BAR_S} s")
    if fast > BAR_S:
        raise SystemExit("bin/svc status above its bar")


if __name__ == "__main__":
    main()
