"""svc installs itself into the agents at bind, with no request (contract §9): once its port accepts
connections, and before anyone has asked it anything, every enabled agent's global config holds
svc's MCP entry for that port and its skills folder holds svc's skills; a settings.json change is
applied by the watcher, again with no request; and the real CLIs' own `mcp list` find svc.

No test here sends svc a request (nor connects to it): readiness is the port's LISTEN row in
/proc/net/tcp, and everything else is read from files. The CLIs' `mcp list` do connect to /mcp,
but only after the files exist, and on a daemon of their own, so that no request of theirs can
start what the other tests expect to run without one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
import tomllib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.agents import agent_env, binary, run_cli, throwaway_home
from harness.daemon import Daemon, migrated_home

AGENTS = ("claude", "codex", "gemini", "opencode", "qwen")
# The contract: where each agent's global config lives under HOME, and svc's entry in it.
CONFIGS = {
    "claude": ".claude.json",
    "codex": ".codex/config.toml",
    "gemini": ".gemini/settings.json",
    "opencode": ".config/opencode/opencode.json",
    "qwen": ".qwen/settings.json",
}
URL_KEY = {
    "claude": "url",
    "codex": "url",
    "gemini": "httpUrl",
    "opencode": "url",
    "qwen": "httpUrl",
}
SKILLS_DIRS = {
    "claude": ".claude/skills",
    "codex": ".codex/skills",
    "gemini": ".gemini/skills",
    "opencode": ".config/opencode/skills",
    "qwen": ".qwen/skills",
}
SKILLS = ("svc", "svc-session", "svc-preview", "svc-md-preview")
COLLABORATION = ("agent-collaboration",)  # Claude Code and Codex only
AT_BIND_S = 5.0  # from the port accepting connections to every file written
WATCHER_S = 5.0  # the watcher looks at settings.json's mtime about once a second
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def skills_of(agent: str) -> tuple[str, ...]:
    return SKILLS + COLLABORATION if agent in ("claude", "codex") else SKILLS


@dataclass
class World:
    home: Path  # the agents' HOME
    workspace: Path
    daemon: Daemon
    listening_at: float  # time.monotonic() when the port was first seen listening

    @property
    def mcp_url(self) -> str:
        return f"http://127.0.0.1:{self.daemon.port}/mcp"


# --- the port, without a request -----------------------------------------------------------------


def listening(port: int) -> bool:
    """Whether a socket listens on 127.0.0.1:`port` (or any address), from the kernel's table:
    no connection is made, so svc cannot tell it was looked at."""
    wanted = f":{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[1].endswith(wanted) and fields[3] == "0A":  # 0A: TCP_LISTEN
                    return True
    return False


class QuietDaemon(Daemon):
    """The tests' Daemon, whose readiness is the port listening instead of an answer to GET."""

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"svc exited at start:\n{self.log()}")
            if listening(self.port):
                return
            time.sleep(0.02)
        raise RuntimeError(f"svc did not listen on {self.port} within {timeout}s:\n{self.log()}")


@contextlib.contextmanager
def started_svc(tmp: Path, prefix: str) -> Iterator[World]:
    """A throw-away HOME whose PATH finds the five real CLIs, and svc started in it; stopped
    (SIGTERM, then waited for) however the test ends."""
    with throwaway_home(prefix) as home:
        workspace = home / "work"
        workspace.mkdir()
        # Other keys, which a settings change must keep; the five agents are enabled by PATH.
        settings = {"workspaces": [str(workspace)], "integrations": {"mcp_auto_install": True}}
        svc_home = migrated_home(tmp, settings)
        daemon = QuietDaemon(svc_home, env=agent_env(home), cold=True)  # as `make run` starts it
        try:
            daemon.start()
            yield World(home, workspace, daemon, time.monotonic())
        finally:
            daemon.stop()


# --- what the files hold -------------------------------------------------------------------------


def read_config(path: Path) -> dict[str, Any] | None:
    """The parsed file, None when missing or caught mid-write."""
    try:
        text = path.read_text()
        return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (FileNotFoundError, json.JSONDecodeError, tomllib.TOMLDecodeError):
        return None


def svc_entry(home: Path, agent: str) -> dict[str, Any] | None:
    data = read_config(home / CONFIGS[agent]) or {}
    servers = data.get({"codex": "mcp_servers", "opencode": "mcp"}.get(agent, "mcpServers"))
    return servers.get("svc") if isinstance(servers, dict) else None


def entry_problem(world: World, agent: str) -> str | None:
    """Why `agent`'s config does not (yet) hold svc's entry for this daemon; None when it does."""
    entry = svc_entry(world.home, agent)
    if entry is None:
        return f"no svc entry in ~/{CONFIGS[agent]}"
    key = URL_KEY[agent]
    if entry.get(key) != world.mcp_url:
        return f"svc's entry in ~/{CONFIGS[agent]} has {key}={entry.get(key)!r}"
    headers = entry.get("http_headers" if agent == "codex" else "headers") or {}
    token = world.daemon.mcp_token  # auth.json: a file, not a request
    if headers.get("Authorization") != f"Bearer {token}":
        return f"svc's entry in ~/{CONFIGS[agent]} does not carry the MCP token of auth.json"
    return None


def skills_problem(world: World, agent: str) -> str | None:
    folder = world.home / SKILLS_DIRS[agent]
    for name in skills_of(agent):
        skill = folder / name / "SKILL.md"
        try:
            text = skill.read_text()
        except FileNotFoundError:
            return f"no ~/{SKILLS_DIRS[agent]}/{name}/SKILL.md"
        if "svc-managed" not in text or f"name: {name}" not in text:
            return f"~/{SKILLS_DIRS[agent]}/{name}/SKILL.md is not svc's skill:\n{text[:300]}"
    return None


def everything_installed(world: World) -> dict[str, str]:
    problems = {}
    for agent in AGENTS:
        if problem := entry_problem(world, agent) or skills_problem(world, agent):
            problems[agent] = problem
    return problems


def wait_until(
    problems: Callable[[], dict[str, str]], deadline: float, what: str, world: World
) -> None:
    """Poll the files (never svc) until `problems()` is empty or `deadline` (monotonic) passes."""
    while True:
        left = problems()
        if not left:
            return
        if world.daemon.proc is None or world.daemon.proc.poll() is not None:
            raise AssertionError(f"svc exited while waiting for {what}:\n{world.daemon.log()}")
        if time.monotonic() > deadline:
            listing = "\n".join(f"  {agent}: {problem}" for agent, problem in left.items())
            raise AssertionError(
                f"{what}: not done for {len(left)} of {len(AGENTS)} agents, with no request "
                f"made to svc:\n{listing}\n--- svc's output ---\n{world.daemon.log()[-3000:]}"
            )
        time.sleep(0.05)


def wait_installed_at_bind(world: World) -> None:
    wait_until(
        lambda: everything_installed(world),
        world.listening_at + AT_BIND_S,
        f"svc's MCP entry ({world.mcp_url}) and skills within {AT_BIND_S:g} s of its port "
        "accepting connections",
        world,
    )


# --- 1 and 2: at bind, then the watcher; no request at all ---------------------------------------


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """A daemon no one ever sends a request to (so nothing a request starts can help)."""
    with started_svc(tmp_path_factory.mktemp("at-bind"), "svc-at-bind-") as world:
        yield world


def test_at_bind_svc_installs_its_entry_and_skills_into_all_five_agents(quiet: World) -> None:
    wait_installed_at_bind(quiet)


def write_settings_atomically(svc_home: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Read settings.json, change it, and replace it in one rename, as an editor may."""
    path = svc_home / "settings.json"
    raw = json.loads(path.read_text())
    change(raw)
    tmp = path.with_name(".settings.json.test-tmp")
    tmp.write_text(json.dumps(raw, indent=2) + "\n")
    tmp.chmod(0o600)
    os.replace(tmp, path)


def test_turning_mcp_auto_install_off_in_settings_json_removes_every_entry(quiet: World) -> None:
    wait_installed_at_bind(quiet)  # the state to change (test 1's, when it ran first)
    # A change in the very instant svc starts may come before the watcher's first look at the
    # file; this test is about a change made while svc runs.
    time.sleep(1.2)
    before = json.loads((quiet.daemon.home / "settings.json").read_text())

    def off(raw: dict[str, Any]) -> None:
        raw.setdefault("integrations", {})["mcp_auto_install"] = False

    write_settings_atomically(quiet.daemon.home, off)
    after = json.loads((quiet.daemon.home / "settings.json").read_text())
    turned_off = {**before["integrations"], "mcp_auto_install": False}
    assert after == {**before, "integrations": turned_off}  # every other key kept

    def still_there() -> dict[str, str]:
        return {
            agent: f"svc's entry ({entry.get(URL_KEY[agent])}) is still in ~/{CONFIGS[agent]}"
            for agent in AGENTS
            if (entry := svc_entry(quiet.home, agent)) is not None
        }

    wait_until(
        still_there,
        time.monotonic() + WATCHER_S,
        f"removing svc's entries within {WATCHER_S:g} s of mcp_auto_install turned off",
        quiet,
    )
    # Only the MCP entries go: skill_auto_install is still on, and the files are still readable.
    for agent in AGENTS:
        assert skills_problem(quiet, agent) is None, skills_problem(quiet, agent)
        path = quiet.home / CONFIGS[agent]
        assert not path.exists() or read_config(path) is not None, path.read_text()


# --- 3: the real CLIs, right after start ---------------------------------------------------------


@dataclass
class Listed:
    output: str
    returncode: int
    seconds: float


def mcp_list(agent: str, world: World) -> Listed:
    # Gemini CLI hides user-level MCP servers in a folder it does not trust; Claude Code wants
    # IS_SANDBOX=1 as root (docs: ../shared/reference/real-agents.md).
    env = agent_env(world.home, GEMINI_CLI_TRUST_WORKSPACE="true", IS_SANDBOX="1")
    started = time.monotonic()
    done: subprocess.CompletedProcess = run_cli(
        [str(binary(agent)), "mcp", "list"], env=env, cwd=world.workspace, timeout=40
    )
    seconds = time.monotonic() - started
    return Listed(ANSI.sub("", done.stdout + done.stderr), done.returncode, seconds)


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, dict[str, Listed]]]:
    """A second daemon: its files waited for (no request), then the five `mcp list` at once."""
    with started_svc(tmp_path_factory.mktemp("at-bind-cli"), "svc-at-bind-cli-") as world:
        wait_installed_at_bind(world)
        for agent in AGENTS:
            binary(agent)
        with ThreadPoolExecutor(len(AGENTS)) as pool:
            futures = {agent: pool.submit(mcp_list, agent, world) for agent in AGENTS}
            results = {agent: future.result() for agent, future in futures.items()}
        print(
            "\nmcp list took: "
            + ", ".join(f"{agent} {r.seconds:.1f} s" for agent, r in results.items())
        )
        yield world, results


@pytest.mark.parametrize("agent", AGENTS)
def test_right_after_start_the_agents_own_mcp_list_shows_svc(
    listed: tuple[World, dict[str, Listed]], agent: str
) -> None:
    world, results = listed
    result = results[agent]
    output = result.output
    lines = [line for line in output.splitlines() if re.search(r"\bsvc\b", line)]
    assert lines, f"{agent} mcp list does not mention svc:\n{output}"
    assert world.mcp_url in output, f"{agent} mcp list does not show {world.mcp_url}:\n{output}"
    if agent == "codex":  # lists its config only, without connecting
        assert re.search(r"\benabled\b", lines[0]), output
    else:
        assert re.search(r"(?<!dis)connected", lines[0], re.IGNORECASE), output
    assert result.returncode == 0, output
